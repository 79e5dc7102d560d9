/* The `gpumem` command: one entry point, one subcommand per file (or folder). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gpumem.h"
#include "tool.h"

static const struct command {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"info", gpumem_info_main, "version, backend, devices and their memory, every GPUMEM_* option"},
    {"check", gpumem_check_main, "run a CUDA program and report its memory bugs: leaks, wrong releases"},
    {"bench", gpumem_bench_main, "allocation and copy costs here, against the PCIe link's limit"},
#ifdef GPUMEM_HAVE_REPORT
    {"report", gpumem_report_main, "a trace of memory over time as an HTML timeline or a text summary"},
#endif
#ifdef GPUMEM_HAVE_LINT
    {"lint", gpumem_lint_main, "review CUDA, C and C++ source for the memory checklist (GM001..GM007)"},
#endif
};
#define NCOMMANDS (sizeof commands / sizeof *commands)

static void usage(FILE *out)
{
    fprintf(out, "usage: gpumem [--help] [--version] COMMAND [ARGS]\n"
                 "       gpumem help COMMAND\n"
                 "\n"
                 "Safe, observable GPU memory allocation for CUDA programs.\n"
                 "\n"
                 "commands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-7s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n"
                 "`gpumem help COMMAND` or `gpumem COMMAND --help` describes a command.\n"
                 "\n"
                 "Exit status: the command's; 2 for a usage error; 77 when the command cannot run\n"
                 "here (no NVIDIA driver or no CUDA device).\n");
}

static const struct command *find(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static int unknown(const char *what, const char *name)
{
    const char *names[NCOMMANDS];
    for (size_t i = 0; i < NCOMMANDS; i++)
        names[i] = commands[i].name;
    static const char *const options[] = {"--help", "--version"};
    const char *best = what[0] == 'o' ? cli_suggest(name, strlen(name), options, 2)
                                      : cli_suggest(name, strlen(name), names, NCOMMANDS);
    if (best)
        fprintf(stderr, "gpumem: error: unknown %s '%s'; did you mean %s?\n", what, name, best);
    else
        fprintf(stderr, "gpumem: error: unknown %s '%s'\n", what, name);
    fprintf(stderr, "(`gpumem --help` lists the commands)\n");
    return CLI_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
        (strcmp(cmd, "help") == 0 && argc == 2)) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("gpumem %s\n", gpumem_version());
        return 0;
    }
    if (strcmp(cmd, "help") == 0) {
        const struct command *c = find(argv[2]);
        if (!c)
            return unknown("command", argv[2]);
        char *help_argv[] = {argv[2], "--help", NULL};
        return c->main(2, help_argv);
    }
    const struct command *c = find(cmd);
    if (c)
        return c->main(argc - 1, argv + 1);
    return unknown(cmd[0] == '-' ? "option" : "command", cmd);
}
