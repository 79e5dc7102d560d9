/* The `gpumem` command: one entry point, one subcommand per file (or folder). */
#include <stdio.h>
#include <string.h>

#include "gpumem.h"
#include "tool.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpumem [--help] [--version] COMMAND [ARGS]\n"
            "\n"
            "Safe, observable GPU memory allocation for CUDA programs.\n"
            "\n"
            "commands:\n"
            "  info    version, backend, devices and their memory, every GPUMEM_* option\n"
            "  check   run a CUDA program and report its memory bugs: leaks, wrong releases\n"
            "  bench   allocation and copy costs here, against the PCIe link's limit\n"
#ifdef GPUMEM_HAVE_REPORT
            "  report  a trace of memory over time as an HTML timeline or a text summary\n"
#endif
#ifdef GPUMEM_HAVE_LINT
            "  lint    review CUDA, C and C++ source for the memory checklist (GM001..GM007)\n"
#endif
            "\n"
            "`gpumem COMMAND --help` describes a command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("gpumem %s\n", gpumem_version());
        return 0;
    }
    if (strcmp(cmd, "info") == 0)
        return gpumem_info_main(argc - 1, argv + 1);
    if (strcmp(cmd, "check") == 0)
        return gpumem_check_main(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0)
        return gpumem_bench_main(argc - 1, argv + 1);
#ifdef GPUMEM_HAVE_REPORT
    if (strcmp(cmd, "report") == 0)
        return gpumem_report_main(argc - 1, argv + 1);
#endif
#ifdef GPUMEM_HAVE_LINT
    if (strcmp(cmd, "lint") == 0)
        return gpumem_lint_main(argc - 1, argv + 1);
#endif
    fprintf(stderr, "gpumem: error: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
