/* Stands for a program that loads the CUDA driver without initializing it (one that links
 * libcuda, or only asks for the driver's version) and forks a worker that exits: under
 * `gpumem check` neither process used CUDA, since the driver never initialized and so never
 * called gpumem check's InitializeInjection, and neither may be said to have run unchecked
 * (check_cli.sh). argv[1]: a stand-in libcuda.so.1 (tests/fake_libcuda.c, by that soname). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2 || !dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "check_fork_nocuda: cannot load %s: %s\n", argc < 2 ? "?" : argv[1],
                dlerror());
        return 3;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return 4;
    if (pid == 0)
        exit(0); /* its exit handlers run, as a worker's do */
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 5;
    return 0;
}
