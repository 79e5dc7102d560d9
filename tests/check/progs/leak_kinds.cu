// expect: leak cudaMalloc device bytes=1048576 leak_kind=definite at=lose@lost,main@lose
// expect: leak cudaMallocAsync device-async bytes=2097152 leak_kind=reachable at=main@async
// expect: leak cudaMallocHost pinned bytes=8192 leak_kind=definite at=main@pinned
// expect: leak cudaMallocManaged managed bytes=4096 leak_kind=reachable at=main@managed
//
// Leak kinds. A device block whose only pointer is overwritten (definitely lost); a pinned
// block pointed at (inside) only from a heap block, which the scan does not read (definitely
// lost too); and two blocks the program still points at where the scan reads: a stream-ordered
// one from a global, a managed one from the stack of a thread that is still running (still
// reachable). By default all four are errors; with --errors-for-leak-kinds=definite, the
// first two.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_prog.h"

static void *global_holder;
static volatile int thread_ready;

static void *holder_thread(void *arg)
{
    void *volatile on_my_stack = arg;
    thread_ready = 1;
    for (;;)
        pause();
    return on_my_stack;
}

__attribute__((noinline)) static void lose(void)
{
    void *volatile p = NULL;
    CHECK(cudaMalloc((void **)&p, 1 << 20)); // @lost
    p = NULL; /* the only copy is gone */
}

int main(void)
{
    prog_init();
    lose(); // @lose
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMallocAsync(&global_holder, 2 << 20, s)); // @async
    CHECK(cudaStreamSynchronize(s));

    char *pinned = NULL;
    CHECK(cudaMallocHost((void **)&pinned, 8192)); // @pinned
    char **heap = (char **)malloc(16 * sizeof *heap);
    if (!heap)
        return 1;
    memset(heap, 0, 16 * sizeof *heap);
    heap[5] = pinned + 100;
    pinned = NULL;

    void *managed = NULL;
    CHECK(cudaMallocManaged(&managed, 4096)); // @managed
    pthread_t t;
    if (pthread_create(&t, NULL, holder_thread, managed) != 0)
        return 1;
    managed = NULL;
    while (!thread_ready)
        usleep(1000);
    printf("holding %p\n", (void *)heap);
    prog_done("leak_kinds");
    return 0;
}
