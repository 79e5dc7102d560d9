// expect: leak cudaMallocHost pinned bytes=8192 at=main@alloc
// expect-child: leak cudaMalloc device bytes=16384 at=child@child_alloc,main@child
//
// Runs itself again as a child process (fork, then exec of /proc/self/exe with the argument
// "child") before touching CUDA. The child leaks one device block; the parent waits for it,
// then leaks one pinned block of its own. Each process's findings belong to its own report.
#include <sys/types.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#include "check_prog.h"

__attribute__((noinline)) static int child(void)
{
    prog_init();
    void *d = NULL;
    CHECK(cudaMalloc(&d, 16384)); // @child_alloc
    CHECK(cudaMemset(d, 0, 16384));
    CHECK(cudaDeviceSynchronize());
    prog_done("fork_child child");
    return 0;
}

int main(int argc, char **argv)
{
    // Not "return child();": at -O2 that is a jump, and main's frame would be gone from the
    // child's stack.
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        int rc = child(); // @child
        printf("fork_child: child returns %d\n", rc);
        return rc;
    }

    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        perror("execl /proc/self/exe");
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
        perror("waitpid");
        return 1;
    }
    // The child's status is not checked beyond its having exited: under gpumem check it may
    // be the --error-exitcode of its own findings.
    if (!WIFEXITED(status)) {
        fprintf(stderr, "fork_child: the child did not exit normally (status %#x)\n", status);
        return 1;
    }
    printf("fork_child: child %d exited with %d\n", (int)pid, WEXITSTATUS(status));

    prog_init();
    void *h = NULL;
    CHECK(cudaMallocHost(&h, 8192)); // @alloc
    memset(h, 0, 8192);
    prog_done("fork_child");
    return 0;
}
