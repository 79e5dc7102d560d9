/* Worker threads that split one memcpy into parts (copy_workers.h): the fills of staging slots
 * for the device and the drains from it. */
#define _POSIX_C_SOURCE 200809L
#include "copy_workers.h"

#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* One round of a spin wait: a pause, and now and then the core for someone else (the driver's
 * threads, the program's), so that spinning workers never starve what they wait for. */
static void spin_round(unsigned *n)
{
    if ((++*n & 255u) == 0)
        sched_yield();
    else
        cpu_relax();
}

/* Why a fill of a slot for the device uses streaming stores: measured on an H200's host with
 * CUPTI's transfer records (bench/profile_copy), the DMA engine read a slot just filled by
 * ordinary stores at 20 to 39 GB/s, where it reads other pinned memory at 55; the slot's lines
 * were still in the CPUs' caches, dirty, and each read of the engine had to fetch them from
 * there. Non-temporal stores write around the caches, so the engine reads the slot from
 * memory. The copy from the device is drained with memcpy: the engine's writes already took
 * the lines out of the caches, and the program's buffer is best left in them. */
static void copy_stream(char *dst, const char *src, size_t n)
{
#if defined(__x86_64__) && defined(__SSE2__)
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
    if (head > n)
        head = n;
    memcpy(dst, src, head);
    dst += head, src += head, n -= head;
    for (; n >= 64; n -= 64, dst += 64, src += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)src);
        __m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(src + 48));
        _mm_stream_si128((__m128i *)dst, a);
        _mm_stream_si128((__m128i *)(dst + 16), b);
        _mm_stream_si128((__m128i *)(dst + 32), c);
        _mm_stream_si128((__m128i *)(dst + 48), d);
    }
    memcpy(dst, src, n);
    _mm_sfence(); /* the stores are visible before the part is counted done */
#else
    memcpy(dst, src, n);
#endif
}

static void run_parts(gpumem__workers *w, char *dst, const char *src, size_t len, size_t part,
                      unsigned parts)
{
    int stream = w->stream;
    for (;;) {
        unsigned i = atomic_fetch_add(&w->next, 1u);
        if (i >= parts)
            return;
        size_t off = (size_t)i * part;
        size_t n = len - off < part ? len - off : part;
        if (stream)
            copy_stream(dst + off, src + off, n);
        else
            memcpy(dst + off, src + off, n);
        atomic_fetch_add(&w->done, 1u);
    }
}

static void *worker_main(void *arg)
{
    gpumem__workers *w = arg;
    unsigned long long seen = 0;
    unsigned spins = 0;
    for (;;) {
        unsigned long long g = atomic_load(&w->gen);
        if (g == seen) {
            if (atomic_load(&w->busy)) {
                spin_round(&spins);
                continue;
            }
            pthread_mutex_lock(&w->lock);
            atomic_fetch_add(&w->sleepers, 1u);
            while (atomic_load(&w->gen) == seen && !atomic_load(&w->busy))
                pthread_cond_wait(&w->wake, &w->lock);
            atomic_fetch_sub(&w->sleepers, 1u);
            pthread_mutex_unlock(&w->lock);
            continue;
        }
        seen = g;
        atomic_fetch_add(&w->active, 1u);
        if (atomic_load(&w->open) == g)
            run_parts(w, w->dst, w->src, w->len, w->part, w->parts);
        atomic_fetch_sub(&w->active, 1u);
    }
    return NULL;
}

/* Starts up to n workers with every signal blocked, so that the program's signals keep going
 * to its own threads. Fewer start when the system refuses: the caller does all the parts the
 * workers do not take, so any number, zero included, copies correctly. */
void gpumem__workers_start(gpumem__workers *w, unsigned n)
{
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = 0; i < n; i++) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &attr, worker_main, w);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        w->nthreads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Opens (busy = 1) or closes a session. Opening wakes the sleeping workers, which then spin
 * until it is closed. With seq_cst order, a worker about to sleep either is counted in
 * sleepers before the caller reads it, or reads busy after it was set. */
void gpumem__workers_session(gpumem__workers *w, int busy)
{
    atomic_store(&w->busy, busy);
    if (busy && atomic_load(&w->sleepers)) {
        pthread_mutex_lock(&w->lock);
        pthread_cond_broadcast(&w->wake);
        pthread_mutex_unlock(&w->lock);
    }
}

/* Posts memcpy(dst, src, len) to the workers, in as many parts as the size is worth; the
 * caller may do other work (queue a transfer) before job_join. A job of one part is left to
 * the caller alone. Only one job is posted at a time. */
void gpumem__job_post(gpumem__workers *w, gpumem__job *j, void *dst, const void *src, size_t len,
                     int stream)
{
    j->dst = dst;
    j->src = src;
    j->len = len;
    j->parts = 0;
    j->stream = stream;
    size_t want = (len + GPUMEM__COPY_MIN_PART - 1) / GPUMEM__COPY_MIN_PART;
    unsigned parts = want < (size_t)w->nthreads + 1 ? (unsigned)want : w->nthreads + 1;
    if (parts <= 1)
        return;
    j->part = ((len + parts - 1) / parts + 4095) & ~(size_t)4095;
    j->parts = (unsigned)((len + j->part - 1) / j->part);
    w->dst = j->dst;
    w->src = j->src;
    w->len = len;
    w->part = j->part;
    w->parts = j->parts;
    w->stream = stream;
    atomic_store(&w->next, 0u);
    atomic_store(&w->done, 0u);
    unsigned long long g = atomic_load(&w->gen) + 1u;
    atomic_store(&w->open, g);
    atomic_store(&w->gen, g);
}

/* Does the parts of j no worker took, waits for the others, and closes the job. */
void gpumem__job_join(gpumem__workers *w, const gpumem__job *j)
{
    if (j->parts == 0) {
        if (j->stream)
            copy_stream(j->dst, j->src, j->len);
        else
            memcpy(j->dst, j->src, j->len);
        return;
    }
    run_parts(w, j->dst, j->src, j->len, j->part, j->parts);
    unsigned spins = 0;
    while (atomic_load(&w->done) < j->parts)
        spin_round(&spins);
    atomic_store(&w->open, 0ull);
    while (atomic_load(&w->active))
        spin_round(&spins);
}
