// expect: leak cudaMalloc device bytes=8192 at=main@alloc
//
// Forks after CUDA is initialized, and the child leaves with exit() (its exit handlers run)
// without exec. The child's copy of the parent's records is not its own: only the parent
// reports the block, once.
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_prog.h"

int main(void)
{
    prog_init();
    void *d = NULL;
    CHECK(cudaMalloc(&d, 8192)); // @alloc
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0)
        exit(0); /* no CUDA here: it does not survive fork */
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "fork_noexec: the child did not exit cleanly\n");
        return 1;
    }
    prog_done("fork_noexec");
    return 0;
}
