/* Subcommands of the `gpumem` command. Each takes the arguments after its name
 * (argv[0] is the subcommand's name) and returns the process exit status:
 * 0 success, 1 findings or failure, 2 usage error. */
#ifndef GPUMEM_TOOL_H
#define GPUMEM_TOOL_H

#include <sys/stat.h>

int gpumem_info_main(int argc, char **argv);
int gpumem_lint_main(int argc, char **argv);
int gpumem_bench_main(int argc, char **argv);
int gpumem_check_main(int argc, char **argv);
int gpumem_report_main(int argc, char **argv);

/* Whether paths a and b name one existing file (a link or another spelling included): an
 * output that is an input would be overwritten before it is read. */
static inline int tool_same_file(const char *a, const char *b)
{
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

#endif
