/* gpumem check's leak kinds (reach.h): which live allocations some pointer still reaches.
 *
 * At exit, every pointer-sized, aligned word of the process's writable data and stacks is
 * read: the data and bss of every loaded object (but the CUDA libraries'), exactly as its
 * program headers give them (dl_iterate_phdr: the writable PT_LOAD segments), the exiting
 * thread's thread-local variables (each object's PT_TLS block, but the checker's own), and the
 * stacks of the threads that exist now (/proc/self/task), each from its live frames up to the
 * end of the mapping its stack pointer lies in: the exiting thread's from the caller's frame,
 * every other thread's from the stack pointer the kernel reports for it while it waits in a
 * system call (/proc/self/task/TID/syscall), less the red zone. The frames below a stack
 * pointer are dead: they keep the values of calls that returned, and an allocation's address
 * left there by, say, a driver thread that once passed it on would make a lost allocation look
 * still reachable. Main's stack is read only below the frame of the start code that called main
 * (preload.c's wrapper): above it lie glibc's start frames and the process's arguments,
 * environment and auxiliary vector, none of them the program's, and glibc's start frame keeps
 * registers saved before main was called. Read with gdb in a test under AddressSanitizer, one
 * of those words was the upper half of libc's address (0x7ff700000000 with libc loaded at
 * 0x7ff77d6...), which makes anything at such a 4 GiB boundary look still reachable in one run
 * in a few hundred. The stack of a thread that ended is not read at all: glibc keeps it mapped,
 * whole, for the next thread, and on an H200 the word left in a joined std::thread's stack made
 * the 256 KiB it had allocated and dropped still reachable. A thread that is running each time
 * it is asked (five tries, 1 ms apart) has no stack pointer to go by (kstkesp, stat's field 29,
 * is 0 on most kernels): then every stack-shaped mapping no other thread owns (an anonymous
 * mapping right above a small guard page) is read whole, as one of them is its. Data is not
 * told by /proc/self/maps alone: an anonymous mapping right after an object's bss
 * is not always more of it (under AddressSanitizer, 1 test run in 20 here had a 1.8 MB anonymous
 * mapping right after libstdc++'s bss, whose stale words made lost allocations look
 * still reachable). Not the heap, nor other anonymous memory: measured on an H200 with
 * CUDA 13, the driver and the runtime keep copies of the address of every allocation in their
 * heap memory, so that a heap scan finds every leak still reachable. A pointer the program
 * keeps only in heap memory (a std::vector of buffers, a framework's pool) therefore does not
 * count: what it points to is definitely lost, as without any scan. A word whose value lies inside
 * an allocation's range [lo, hi) reaches it, also when it points inside rather than at the
 * start: CUDA programs keep offsets into their buffers (sub-buffers, pitched rows, a pool's
 * blocks), and an interior pointer is as good a handle on the memory as its base. Nothing is
 * followed through: device memory cannot be read from here, and the host memory CUDA
 * allocated (pinned, managed) is left out of the scan (reading managed memory would migrate it
 * to the host).
 *
 * The scan is conservative in the way valgrind's is: a word that only looks like a pointer
 * (stale data in freed heap memory, an integer) makes an allocation still reachable, never
 * the other way round, so what is reported as definitely lost is.
 *
 * Speed: a value is first looked up in a bitmap of the 64 KiB granules the ranges cover, hashed
 * (one multiply, one load and a bit test for nearly every word), then by bisection in the
 * ranges sorted by start.
 * Pages that were never touched (mincore says not resident) are skipped: they hold zeros. */
#define _GNU_SOURCE
#include "reach.h"

#include <dirent.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GRANULE_SHIFT 16
#define BITMAP_BITS 22 /* 4 Mi bits (512 KiB, for the cache): few set for 10 000 ranges of 1 MiB */
#define BITMAP_WORDS ((1u << BITMAP_BITS) / 64)

/* A granule's bit: hashed, so that the granules small integers and ordinary heap pointers fall
 * in are no likelier than any other to share a bit with the ranges'. */
static inline size_t granule_bit(uintptr_t v)
{
    return (size_t)(((uint64_t)(v >> GRANULE_SHIFT) * 0x9E3779B97F4A7C15ull) >> (64 - BITMAP_BITS));
}

typedef struct {
    uintptr_t lo, hi, maxhi; /* maxhi: the largest hi of this and every range before it */
    size_t index;
} span_ix;

/* Memory of the scan's own: mappings it leaves out of what it reads. */
static void *map_anon(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* In-place heap sorts by start. Not qsort: glibc's may sort through a heap buffer, and a freed
 * buffer holding copies of the ranges would look like the program's pointers to them. */
#define SIFT(name, type)                                                                     \
    static void name##_sift(type *v, size_t i, size_t n)                                     \
    {                                                                                        \
        for (size_t c; (c = 2 * i + 1) < n; i = c) {                                         \
            if (c + 1 < n && v[c + 1].lo > v[c].lo)                                          \
                c++;                                                                         \
            if (v[i].lo >= v[c].lo)                                                          \
                return;                                                                      \
            type t = v[i];                                                                   \
            v[i] = v[c];                                                                     \
            v[c] = t;                                                                        \
        }                                                                                    \
    }
#define HEAP_SORT(name, type)                                                                \
    static void name(type *v, size_t n)                                                      \
    {                                                                                        \
        for (size_t i = n / 2; i-- > 0;)                                                     \
            name##_sift(v, i, n);                                                            \
        for (size_t end = n; end-- > 1;) {                                                   \
            type t = v[0];                                                                   \
            v[0] = v[end];                                                                   \
            v[end] = t;                                                                      \
            name##_sift(v, 0, end);                                                          \
        }                                                                                    \
    }
SIFT(sort_ix, span_ix)
HEAP_SORT(sort_ix, span_ix)
SIFT(sort_spans, check_span)
HEAP_SORT(sort_spans, check_span)
typedef struct {
    uintptr_t lo, hi;
    const char *tls_of; /* a PT_TLS block: its object's path ("": the program); NULL: data */
} segment;
SIFT(sort_segments, segment)
HEAP_SORT(sort_segments, segment)

typedef struct {
    span_ix *ix;
    size_t n;
    uint64_t *bitmap;
    unsigned char *reached;
    check_reach_found *found; /* where each target was first reached; NULL: not kept */
    check_reach_found origin; /* what is being read now */
    size_t left; /* targets not reached yet: the scan stops early at 0 */
    uintptr_t min_lo, width; /* every range lies in [min_lo, min_lo + width) */
} scan_state;

static void mark(scan_state *st, uintptr_t v, const uintptr_t *at)
{
    /* The last range starting at or below v, then back while an earlier one may hold v. */
    size_t lo = 0, hi = st->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->ix[mid].lo <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t j = lo; j-- > 0 && st->ix[j].maxhi > v;) {
        if (v < st->ix[j].hi && !st->reached[st->ix[j].index]) {
            st->reached[st->ix[j].index] = 1;
            if (st->found) {
                st->found[st->ix[j].index] = st->origin;
                st->found[st->ix[j].index].at = (uintptr_t)at;
            }
            st->left--;
        }
    }
}

static inline int maybe(const uint64_t *bm, uintptr_t v)
{
    size_t g = granule_bit(v);
    return (int)((bm[g >> 6] >> (g & 63)) & 1);
}

/* The scan reads memory it does not own, as a garbage collector does: an AddressSanitizer build
 * must not check these reads (the redzones between globals are read too), nor a
 * ThreadSanitizer build (it has no shadow for much of what is read, and would fault). */
#if defined(__GNUC__)
#define NO_ASAN __attribute__((no_sanitize_address, no_sanitize_thread))
#else
#define NO_ASAN
#endif

NO_ASAN static void scan_words(scan_state *st, const uintptr_t *w, size_t n)
{
    const uint64_t *bm = st->bitmap;
    const uintptr_t lo = st->min_lo, width = st->width;
    size_t i = 0;
    /* Four words a step. Most values (small integers, heap pointers) lie outside the span of
     * every range: one subtraction and compare each, one branch for the four. */
    for (; i + 4 <= n; i += 4) {
        uintptr_t a = w[i], b = w[i + 1], c = w[i + 2], d = w[i + 3];
        if (__builtin_expect(((a - lo) < width) | ((b - lo) < width) | ((c - lo) < width) |
                                 ((d - lo) < width), 0) &&
            (maybe(bm, a) | maybe(bm, b) | maybe(bm, c) | maybe(bm, d))) {
            if (maybe(bm, a))
                mark(st, a, &w[i]);
            if (maybe(bm, b))
                mark(st, b, &w[i + 1]);
            if (maybe(bm, c))
                mark(st, c, &w[i + 2]);
            if (maybe(bm, d))
                mark(st, d, &w[i + 3]);
        }
    }
    for (; i < n; i++)
        if (w[i] - lo < width && maybe(bm, w[i]))
            mark(st, w[i], &w[i]);
}

/* Scans the words of [a, b) (8-byte aligned) on resident pages. Returns the bytes read. */
NO_ASAN static uint64_t scan_range(scan_state *st, uintptr_t a, uintptr_t b, unsigned char *vec,
                           size_t vec_pages, size_t page)
{
    uint64_t done = 0;
    uintptr_t p = a & ~(uintptr_t)(page - 1);
    while (p < b && st->left) {
        size_t pages = (b - p + page - 1) / page;
        if (pages > vec_pages)
            pages = vec_pages;
        if (mincore((void *)p, pages * page, vec) != 0)
            return done; /* unmapped meanwhile */
        for (size_t i = 0; i < pages; i++) {
            if (!(vec[i] & 1))
                continue;
            size_t run = 1; /* resident pages in a row: one pass */
            while (i + run < pages && (vec[i + run] & 1))
                run++;
            uintptr_t lo = p + i * page, hi = lo + run * page;
            lo = lo < a ? a : lo;
            hi = hi > b ? b : hi;
            if (lo < hi) {
                scan_words(st, (const uintptr_t *)lo, (hi - lo) / sizeof(uintptr_t));
                done += hi - lo;
            }
            i += run - 1;
        }
        p += pages * page;
    }
    return done;
}

/* The process's threads, each with where its stack's live part begins. */
typedef struct {
    long tid;
    uintptr_t sp; /* its stack pointer; 0: not known (it ran each time it was asked) */
    int self;     /* the calling thread: sp is where its live frames begin, no red zone */
} live_thread;

enum { THREAD_SP, THREAD_RUNNING, THREAD_GONE };

/* Reads /proc/self/task/TID/FILE into text, NUL-terminated. Returns its length, or -1. Reads
 * through read(2) into the caller's stack, below the part of it the scan reads. */
static ssize_t read_task_file(long tid, const char *file, char *text, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/%s", tid, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t got = read(fd, text, cap - 1);
    close(fd);
    if (got < 0)
        return -1;
    text[got] = '\0';
    return got;
}

/* The stack pointer in a syscall file: its next-to-last field ("NR ARG1 ... ARG6 SP PC", or
 * "-1 SP PC" for a thread stopped outside a system call); 0 when there is none. */
static uintptr_t syscall_sp(char *text)
{
    char *f[10], *save = NULL;
    int nf = 0;
    for (char *t = strtok_r(text, " \n", &save); t && nf < 10; t = strtok_r(NULL, " \n", &save))
        f[nf++] = t;
    return nf >= 3 ? (uintptr_t)strtoull(f[nf - 2], NULL, 16) : 0;
}

/* A stat file's state letter (after the command's closing parenthesis) and its field 29,
 * kstkesp, the stack pointer (0 from most kernels for a thread that is not exiting). */
static char stat_state(char *text, uintptr_t *kstkesp)
{
    char *p = strrchr(text, ')'), *save = NULL;
    *kstkesp = 0;
    if (!p || p[1] != ' ')
        return '?';
    char state = p[2];
    int field = 3;
    for (char *t = strtok_r(p + 2, " ", &save); t; t = strtok_r(NULL, " ", &save), field++) {
        if (field == 29) {
            *kstkesp = (uintptr_t)strtoull(t, NULL, 10);
            break;
        }
    }
    return state;
}

/* Thread tid's stack pointer: the kernel gives it while the thread waits in a system call, as
 * threads mostly do at exit (same-process threads may read each other's files without ptrace
 * rights); a running thread is asked five times, 1 ms apart, then kstkesp is tried. THREAD_GONE:
 * the thread has ended (the main thread after pthread_exit stays listed as a zombie). */
static int thread_sp(long tid, uintptr_t *sp)
{
    char text[512];
    *sp = 0;
    if (read_task_file(tid, "stat", text, sizeof text) <= 0)
        return THREAD_GONE;
    uintptr_t kstkesp;
    char state = stat_state(text, &kstkesp);
    if (state == 'Z' || state == 'X' || state == 'x')
        return THREAD_GONE;
    for (int tries = 0; tries < 5; tries++) {
        if (read_task_file(tid, "syscall", text, sizeof text) <= 0)
            break;
        if (strncmp(text, "running", 7) != 0) {
            *sp = syscall_sp(text);
            break;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (!*sp)
        *sp = kstkesp;
    return *sp ? THREAD_SP : THREAD_RUNNING;
}

/* The threads that exist now (/proc/self/task), the caller first with self_sp. Returns how many
 * were stored in t[0..cap); *running counts those whose stack pointer could not be had. */
static size_t live_threads(live_thread *t, size_t cap, uintptr_t self_sp, size_t *running)
{
    long self = (long)syscall(SYS_gettid);
    size_t n = 0;
    *running = 0;
    t[n++] = (live_thread){self, self_sp, 1};
    DIR *d = opendir("/proc/self/task");
    if (!d) {
        *running = 1; /* no /proc: which stacks are live cannot be told, all are read */
        return n;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end || tid == self)
            continue;
        uintptr_t sp = 0;
        /* Past cap, a thread counts as one whose stack pointer could not be had. */
        int state = n < cap ? thread_sp(tid, &sp) : THREAD_RUNNING;
        if (state == THREAD_GONE)
            continue;
        *running += state == THREAD_RUNNING;
        if (n < cap)
            t[n++] = (live_thread){tid, sp, 0};
    }
    closedir(d);
    return n;
}

/* Where the live part of the mapping [a, b) begins: at the lowest stack pointer of a thread in
 * it, less the 128 bytes below it that x86-64 code may use without moving it (the red zone;
 * none for the caller, whose sp is a frame's). b when no thread's stack pointer is in it; *tid
 * is the thread's. */
static uintptr_t live_from(uintptr_t a, uintptr_t b, const live_thread *t, size_t nt, long *tid)
{
    uintptr_t from = b;
    for (size_t i = 0; i < nt; i++) {
        if (!t[i].sp || t[i].sp < a || t[i].sp >= b)
            continue;
        uintptr_t f = t[i].self ? t[i].sp : t[i].sp - a > 128 ? t[i].sp - 128 : a;
        if (f < from) {
            from = f;
            *tid = t[i].tid;
        }
    }
    return from == b ? b : from & ~(uintptr_t)7;
}

/* Mappings not to read: devices' (a GPU's memory mapped into the process), the kernel's, and
 * the CUDA libraries' own data, whose tables of allocations are not the program's pointers. */
static int skipped_mapping(const char *path)
{
    if (strncmp(path, "/dev/", 5) == 0 || strcmp(path, "[vvar]") == 0 ||
        strcmp(path, "[vsyscall]") == 0 || strcmp(path, "[vvar_vclock]") == 0)
        return 1;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    /* ... and a sanitizer runtime's (its bookkeeping holds the values it saw pass). */
    return strncmp(base, "libcuda.so", 10) == 0 || strncmp(base, "libcupti", 8) == 0 ||
           strncmp(base, "libnvidia-", 10) == 0 || strncmp(base, "libcudart", 9) == 0 ||
           strncmp(base, "libasan", 7) == 0 || strncmp(base, "libubsan", 8) == 0 ||
           strncmp(base, "libtsan", 7) == 0 || strncmp(base, "liblsan", 7) == 0;
}

/* The loaded objects' writable memory, as their program headers give it (reach.c's comment). */
typedef struct {
    segment *v;
    size_t n, cap;
    uintptr_t self; /* an address in the checker's own code: its object's thread-local variables
                     * are the checker's bookkeeping, not the program's */
} seg_list;

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    seg_list *s = arg;
    if (skipped_mapping(info->dlpi_name ? info->dlpi_name : ""))
        return 0;
    int tls = size >= offsetof(struct dl_phdr_info, dlpi_tls_data) + sizeof info->dlpi_tls_data &&
              info->dlpi_tls_data;
    for (size_t i = 0; i < info->dlpi_phnum && tls; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && s->self >= lo && s->self < lo + ph->p_memsz)
            tls = 0;
    }
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo;
        const char *tls_of = NULL;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W))
            lo = info->dlpi_addr + ph->p_vaddr;
        else if (ph->p_type == PT_TLS && tls)
            lo = (uintptr_t)info->dlpi_tls_data, tls_of = info->dlpi_name ? info->dlpi_name : "";
        else
            continue;
        if (ph->p_memsz == 0)
            continue;
        if (s->n == s->cap)
            return 1; /* more than were counted (an object loaded meanwhile): stop */
        s->v[s->n++] = (segment){lo & ~(uintptr_t)7, (lo + ph->p_memsz + 7) & ~(uintptr_t)7, tls_of};
    }
    return 0;
}

static int count_headers(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(size_t *)arg += info->dlpi_phnum;
    return 0;
}

/* Reads [a, b) but the spans of skip (sorted) that overlap it. Returns the bytes read. */
static uint64_t scan_between(scan_state *st, uintptr_t a, uintptr_t b, const check_span *skip,
                             size_t nskip, unsigned char *vec, size_t vec_pages, size_t page)
{
    uint64_t done = 0;
    uintptr_t at = a;
    for (size_t k = 0; k < nskip && at < b; k++) {
        uintptr_t slo = skip[k].lo & ~(uintptr_t)7, shi = (skip[k].hi + 7) & ~(uintptr_t)7;
        if (shi <= at || slo >= b)
            continue;
        if (slo > at)
            done += scan_range(st, at, slo, vec, vec_pages, page);
        at = shi > at ? shi : at;
    }
    if (at < b)
        done += scan_range(st, at, b, vec, vec_pages, page);
    return done;
}

/* What check_reach_scan holds: mappings of its own, left out of what it reads. */
typedef struct {
    span_ix *ix;
    uint64_t *bitmap;
    unsigned char *vec;
    check_span *skip;
    seg_list segs;
    size_t n, nskip, ix_bytes, skip_bytes;
} scan_mem;

#define VEC_PAGES ((size_t)1 << 14)

/* The targets sorted by start, with the bitmap of the granules they cover; the objects'
 * writable segments (counted first), sorted: what of the mappings is data; the spans not to
 * read, sorted: the caller's and the scan's own memory. Returns 0, or -1 without memory. */
static int scan_prepare(scan_mem *m, const check_span *targets, size_t n,
                        const check_span *skip_in, size_t nskip)
{
    m->n = n;
    m->ix_bytes = n * sizeof(span_ix);
    m->skip_bytes = (nskip + 8) * sizeof(check_span);
    m->ix = map_anon(m->ix_bytes);
    m->bitmap = map_anon(BITMAP_WORDS * sizeof(uint64_t));
    m->vec = map_anon(VEC_PAGES);
    m->skip = map_anon(m->skip_bytes);
    size_t nheaders = 0;
    dl_iterate_phdr(count_headers, &nheaders);
    m->segs = (seg_list){NULL, 0, nheaders + 16, (uintptr_t)&check_reach_scan};
    m->segs.v = map_anon(m->segs.cap * sizeof *m->segs.v);
    if (!m->ix || !m->bitmap || !m->vec || !m->skip || !m->segs.v)
        return -1;
    dl_iterate_phdr(add_object, &m->segs);
    sort_segments(m->segs.v, m->segs.n);
    for (size_t i = 0; i < n; i++)
        m->ix[i] = (span_ix){.lo = targets[i].lo, .hi = targets[i].hi, .index = i};
    sort_ix(m->ix, n);
    uintptr_t maxhi = 0;
    for (size_t i = 0; i < n; i++) {
        maxhi = m->ix[i].hi > maxhi ? m->ix[i].hi : maxhi;
        m->ix[i].maxhi = maxhi;
        uintptr_t g0 = m->ix[i].lo >> GRANULE_SHIFT, g1 = (m->ix[i].hi - 1) >> GRANULE_SHIFT;
        if (m->ix[i].hi <= m->ix[i].lo)
            continue;
        if (g1 - g0 >= (1u << BITMAP_BITS)) {
            memset(m->bitmap, 0xff, BITMAP_WORDS * sizeof(uint64_t));
            continue;
        }
        for (uintptr_t g = g0; g <= g1; g++) {
            size_t b = granule_bit(g << GRANULE_SHIFT);
            m->bitmap[b >> 6] |= (uint64_t)1 << (b & 63);
        }
    }
    memcpy(m->skip, skip_in, nskip * sizeof *m->skip);
    m->skip[nskip++] = (check_span){(uintptr_t)m->ix, (uintptr_t)m->ix + m->ix_bytes};
    m->skip[nskip++] = (check_span){(uintptr_t)m->bitmap, (uintptr_t)m->bitmap + BITMAP_WORDS * 8};
    m->skip[nskip++] = (check_span){(uintptr_t)m->vec, (uintptr_t)m->vec + VEC_PAGES};
    m->skip[nskip++] = (check_span){(uintptr_t)m->skip, (uintptr_t)m->skip + m->skip_bytes};
    m->skip[nskip++] = (check_span){(uintptr_t)m->segs.v, (uintptr_t)(m->segs.v + m->segs.cap)};
    sort_spans(m->skip, nskip);
    m->nskip = nskip;
    return 0;
}

static void scan_release(scan_mem *m)
{
    if (m->segs.v)
        munmap(m->segs.v, m->segs.cap * sizeof *m->segs.v);
    if (m->ix)
        munmap(m->ix, m->ix_bytes);
    if (m->bitmap)
        munmap(m->bitmap, BITMAP_WORDS * sizeof(uint64_t));
    if (m->vec)
        munmap(m->vec, VEC_PAGES);
    if (m->skip)
        munmap(m->skip, m->skip_bytes);
}

/* Reads the stacks in the mapping [a, b) (see reach.c's comment). Returns 1 when it is a
 * stack: the live part of it was read, or nothing of it when no live thread uses it (the
 * cached stack of a thread that ended), unless some thread's stack pointer could not be had:
 * then a stack no other thread owns may be that thread's and is read whole. */
static int scan_stack_mapping(scan_state *st, const scan_mem *m, uintptr_t a, uintptr_t b,
                              int stack_shaped, const live_thread *t, size_t nt, size_t running,
                              uintptr_t ceiling, long long *total)
{
    long tid = 0;
    uintptr_t from = live_from(a, b, t, nt, &tid);
    if (from == b && !stack_shaped)
        return 0;
    if (from == b && !running)
        return 1;
    if (from == b)
        from = a;
    /* The stack main was called on: nothing from the start code's frame up. */
    uintptr_t to = ceiling > a && ceiling <= b ? ceiling & ~(uintptr_t)7 : b;
    st->origin = (check_reach_found){0, CHECK_REACH_STACK, tid, NULL};
    if (from < to)
        *total += (long long)scan_between(st, from, to, m->skip, m->nskip, m->vec, VEC_PAGES,
                                          (size_t)sysconf(_SC_PAGESIZE));
    return stack_shaped;
}

/* Reads the data and stacks /proc/self/maps lists; the data: the parts of the mappings the
 * objects' segments cover (the heap and other anonymous memory are not read: see the comment
 * at the top). floor: the lowest address of the caller's stack that may be read (the scan's
 * own frames below it hold the ranges); ceiling: the start code's frame on main's stack (0:
 * unknown), where reading that stack stops. Returns the bytes read, or -1. */
static long long scan_mappings(scan_state *st, const scan_mem *m, live_thread *t, size_t nt,
                               size_t running, uintptr_t floor, uintptr_t ceiling)
{
    FILE *maps = fopen("/proc/self/maps", "re");
    if (!maps)
        return -1;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    long long total = 0;
    char line[4096];
    /* The mapping before: a thread's stack is an anonymous mapping right above its guard page. */
    unsigned long prev_end = 0;
    int prev_guard = 0;
    size_t si = 0; /* the first segment that may end above the mappings to come */
    while (st->left && fgets(line, sizeof line, maps)) {
        unsigned long a, b;
        char perms[8] = "";
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &a, &b, perms, &path_at) < 3)
            continue;
        char *path = path_at ? line + path_at : line + strlen(line);
        path[strcspn(path, "\n")] = '\0';
        int after_guard = a == prev_end && prev_guard;
        prev_end = b;
        /* A guard page is small (glibc's default is one page); the larger reserved regions of
         * other allocators (a sanitizer's heap) are not guard pages. */
        prev_guard = !path[0] && strncmp(perms, "---", 3) == 0 && b - a <= ((unsigned long)64 << 10);
        if (perms[0] != 'r' || perms[1] != 'w' || skipped_mapping(path))
            continue;
        if (floor >= a && floor < b && t[0].sp >= b)
            t[0].sp = floor; /* the caller's frames are in this stack, not above it */
        int stack_shaped = strcmp(path, "[stack]") == 0 || (!path[0] && after_guard);
        if (scan_stack_mapping(st, m, a, b, stack_shaped, t, nt, running, ceiling, &total))
            continue;
        while (si < m->segs.n && m->segs.v[si].hi <= a)
            si++;
        for (size_t k = si; k < m->segs.n && m->segs.v[k].lo < b; k++) {
            uintptr_t lo = m->segs.v[k].lo > a ? m->segs.v[k].lo : a;
            uintptr_t hi = m->segs.v[k].hi < b ? m->segs.v[k].hi : b;
            st->origin = m->segs.v[k].tls_of
                             ? (check_reach_found){0, CHECK_REACH_TLS, t[0].tid, m->segs.v[k].tls_of}
                             : (check_reach_found){0, CHECK_REACH_DATA, 0, NULL};
            if (lo < hi)
                total += (long long)scan_between(st, lo, hi, m->skip, m->nskip, m->vec,
                                                 VEC_PAGES, page);
        }
    }
    fclose(maps);
    return total;
}

long long check_reach_scan(const check_span *targets, size_t n, unsigned char *reached,
                           check_reach_found *found, const check_span *skip_in, size_t nskip,
                           uintptr_t stack_from, uintptr_t stack_to)
{
    memset(reached, 0, n);
    if (found)
        memset(found, 0, n * sizeof *found);
    if (n == 0)
        return 0;
    scan_mem m;
    memset(&m, 0, sizeof m);
    long long total = -1;
    if (scan_prepare(&m, targets, n, skip_in, nskip) == 0) {
        scan_state st = {m.ix, n, m.bitmap, reached, found, {0, 0, 0, NULL}, n, m.ix[0].lo,
                         m.ix[n - 1].maxhi - m.ix[0].lo};
        /* The caller's stack: only from stack_from up (the frames below are dead), and never
         * this function's own locals, which hold the ranges. */
        uintptr_t here = (uintptr_t)__builtin_frame_address(0);
        live_thread t[1024];
        size_t running;
        size_t nt = live_threads(t, sizeof t / sizeof t[0], stack_from > here ? stack_from : here,
                                 &running);
        total = scan_mappings(&st, &m, t, nt, running, here, stack_to);
    }
    scan_release(&m);
    return total;
}
