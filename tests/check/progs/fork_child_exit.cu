// expect: leak cudaMalloc device bytes=32768 leak_kind=reachable at=child@alloc,main@child
//
// A parent that never uses CUDA forks a child (no exec) that does: the child allocates, keeps
// the pointer in a live frame and calls exit(). The child's report is its own (its pid, its
// stacks) and lists the leak, still reachable from the child's stack; the parent used no CUDA
// and reports nothing (it is not said to have run unchecked). The child is the program too
// (same command line), so its report is the one the expect line is checked against.
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_prog.h"

__attribute__((noinline)) static void child(void)
{
    prog_init();
    void *volatile d = NULL;
    CHECK(cudaMalloc((void **)&d, 32768)); // @alloc
    CHECK(cudaMemset(d, 0, 32768));
    CHECK(cudaDeviceSynchronize());
    printf("fork_child_exit: child keeps %p\n", (void *)d);
    fflush(stdout);
    exit(0); // d is still in this frame
}

int main(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0)
        child(); // @child
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        fprintf(stderr, "fork_child_exit: the child did not exit normally\n");
        return 1;
    }
    prog_done("fork_child_exit");
    return 0;
}
