// expect: leak cudaMalloc device bytes=65536 leak_kind=definite at=upload@alloc,task@upload
//
// A thread pool: four workers wait on a condition variable for tasks; one task allocates
// 64 KiB of device memory, uses it and returns without releasing it. At exit the workers are
// alive, all blocked in the wait: the task's frames, where the pointer was, lie below the stack
// pointer of the worker that ran it (dead), so the memory is definitely lost.
#include <pthread.h>
#include <string.h>

#include <thread>
#include <vector>

#include "check_prog.h"

// Not std::mutex and std::condition_variable: a static condition variable's destructor runs
// at exit and waits for the workers blocked on it, forever.
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, finished = PTHREAD_COND_INITIALIZER;
static void (*queued)(void);
static int done;

__attribute__((noinline)) static void upload(void)
{
    void *volatile d = NULL;
    CHECK(cudaMalloc((void **)&d, 65536)); // @alloc
    CHECK(cudaMemset(d, 1, 65536));
    CHECK(cudaDeviceSynchronize());
}

__attribute__((noinline)) static void task(void)
{
    // A task's own frames (4 KiB here) put its calls below where the worker waits next.
    volatile char scratch[4096];
    memset((char *)scratch, 0, sizeof scratch);
    upload(); // @upload
    scratch[0] = scratch[1];
}

static void worker(void)
{
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!queued)
            pthread_cond_wait(&work, &lock);
        void (*run)(void) = queued;
        queued = NULL;
        pthread_mutex_unlock(&lock);
        run();
        pthread_mutex_lock(&lock);
        done++;
        pthread_cond_broadcast(&finished);
        pthread_mutex_unlock(&lock);
    }
}

int main(void)
{
    prog_init();
    std::vector<std::thread> pool;
    for (int i = 0; i < 4; i++)
        pool.emplace_back(worker);
    pthread_mutex_lock(&lock);
    queued = task;
    pthread_cond_signal(&work);
    while (done < 1)
        pthread_cond_wait(&finished, &lock);
    pthread_mutex_unlock(&lock);
    for (auto &t : pool)
        t.detach(); // alive, waiting for work, until the process ends
    prog_done("leak_thread_pool");
    return 0;
}
