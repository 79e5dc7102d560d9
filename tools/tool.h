/* Subcommands of the `gpumem` command. Each takes the arguments after its name
 * (argv[0] is the subcommand's name) and returns the process exit status:
 * 0 success, 1 findings or failure, 2 usage error. */
#ifndef GPUMEM_TOOL_H
#define GPUMEM_TOOL_H

int gpumem_info_main(int argc, char **argv);
int gpumem_lint_main(int argc, char **argv);
int gpumem_bench_main(int argc, char **argv);
int gpumem_check_main(int argc, char **argv);
int gpumem_report_main(int argc, char **argv);

#endif
