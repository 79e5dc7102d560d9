/* The command-line grammar every `gpumem` subcommand shares. A subcommand describes its
 * options in a table and reads them one at a time with cli_next():
 *
 *     static const cli_opt opts[] = {
 *         {"--json", 0, CLI_VALUE, OPT_JSON},   // --json PATH or --json=PATH
 *         {"--quiet", 'q', CLI_FLAG, OPT_QUIET} // --quiet or -q
 *     };
 *     static const cli_cmd cmd = {"bench", opts, CLI_COUNT(opts), usage, CLI_NO_OPERANDS};
 *     cli c;
 *     cli_start(&c, &cmd, argc, argv);
 *     for (int id; (id = cli_next(&c)) != CLI_DONE;)
 *         switch (id) {
 *         case CLI_EXIT: return c.status;        // --help, --version or a usage error
 *         case OPT_JSON: path = c.value; break;
 *         ...
 *         }
 *
 * Both `--opt value` and `--opt=value` (and `-j 4`, `-j4` for a short name); `--` ends the
 * options; -h/--help and --version are answered here (a table row named "--version" takes
 * --version over); an unknown option gets "did you mean". Adding an option is one table row
 * and one case. */
#ifndef GPUMEM_CLI_H
#define GPUMEM_CLI_H

#include <stddef.h>
#include <stdio.h>

/* Exit statuses shared by the subcommands. */
enum {
    CLI_EXIT_USAGE = 2,       /* a usage error */
    CLI_EXIT_UNAVAILABLE = 77 /* cannot run here: no NVIDIA driver or no CUDA device (77 is
                                 the skip status of CTest's SKIP_RETURN_CODE and automake) */
};

typedef enum { CLI_FLAG, CLI_VALUE } cli_arg;

typedef struct {
    const char *name; /* "--leak-check" */
    char short_name;  /* 'q' for -q, or 0 */
    cli_arg arg;
    int id; /* what cli_next returns for it: >= 0 */
} cli_opt;

typedef enum {
    CLI_NO_OPERANDS,  /* options only (bench, info) */
    CLI_STOP_OPERAND, /* the first operand ends the options: it and the rest are a command */
    CLI_OPERANDS      /* operands stand among the options (lint's paths): each comes back as
                         CLI_OPERAND; `--` ends the options and what follows it is the
                         subcommand's (at CLI_DONE, from argv[next]; after_dashes is set) */
} cli_operands;

typedef struct {
    const char *name; /* the subcommand, "check" */
    const cli_opt *opts;
    size_t count;
    void (*usage)(FILE *out); /* the --help text; also the man page's source */
    cli_operands operands;
} cli_cmd;

#define CLI_COUNT(table) (sizeof(table) / sizeof *(table))

enum { CLI_DONE = -1, CLI_EXIT = -2, CLI_OPERAND = -3 /* value: the operand */ };

typedef struct {
    const cli_cmd *cmd;
    int argc;
    char **argv;
    int next;          /* index in argv of what is read next; at CLI_DONE, the first operand */
    const char *value; /* the option's value (NULL for a flag) */
    const char *opt;   /* the option's name from the table, for messages */
    int status;        /* at CLI_EXIT: the exit status */
    int only_operands; /* after `--` */
    int after_dashes;  /* CLI_OPERANDS: CLI_DONE came at `--` */
} cli;

void cli_start(cli *c, const cli_cmd *cmd, int argc, char **argv);
int cli_next(cli *c);

/* A usage error: prints "gpumem CMD: error: ..." and where the options are described;
 * returns CLI_EXIT_USAGE. */
__attribute__((format(printf, 2, 3))) int cli_usage_error(const cli *c, const char *fmt, ...);

/* Whether the CUDA driver can be loaded (GPUMEM_LIBCUDA, else libcuda.so.1); if not, prints
 * "gpumem CMD: error: no NVIDIA driver here (...)" ending with NEED and returns 0. */
int cli_have_driver(const char *cmd, const char *need);

/* The line every "cannot run here" message ends with: what does work without a GPU. */
void cli_say_without_gpu(void);

/* The closest of CANDIDATES to NAME (first LEN characters), or NULL: for "did you mean". */
const char *cli_suggest(const char *name, size_t len, const char *const *candidates, size_t count);

#endif
