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

/* tools/paths.c: what the tools check of the paths they are given. */
/* The absolute name of path, which need not exist: its folder resolved (links, "..", the
 * current folder), its last part as given. 0 on success; -1 when the folder cannot be resolved
 * or the name does not fit in out (PATH_MAX bytes). */
int tool_path_name(const char *path, char *out);
/* Whether paths a and b name one file: by identity (device and inode: a link, a hard link or
 * another spelling of an existing file), or by name, for a file system whose inode numbers
 * are not to be trusted and for a name that does not exist yet. An output that is an input
 * would be overwritten before, or while, it is read. */
int tool_same_file(const char *a, const char *b);

#endif
