/* gpumem check's leak kinds (reach.h): which live allocations some pointer still reaches.
 *
 * At exit, every pointer-sized, aligned word of the process's writable data and stacks is
 * read: the data and bss of every loaded object (but the CUDA libraries'), exactly as its
 * program headers give them (dl_iterate_phdr: the writable PT_LOAD segments), the exiting
 * thread's thread-local variables (each object's PT_TLS block, but the checker's own), the main
 * stack and the threads' stacks (an anonymous mapping right above a guard page), each from its
 * live frames up: the exiting thread's from the caller's frame, every other thread's from the stack
 * pointer the kernel reports for it while it waits in a system call
 * (/proc/self/task/TID/syscall). The frames below a stack pointer are dead: they keep the values
 * of calls that returned, and an allocation's address left there by, say, a driver thread that
 * once passed it on would make a lost allocation look still reachable. A thread that is running
 * (not in a system call) when the scan reads it, or whose file cannot be read, has its whole
 * stack read. Not by /proc/self/maps alone: an anonymous mapping right after an object's bss
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
    span_ix *ix;
    size_t n;
    uint64_t *bitmap;
    unsigned char *reached;
    uintptr_t *found_at; /* where each target was first reached; NULL: not kept */
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
            if (st->found_at)
                st->found_at[st->ix[j].index] = (uintptr_t)at;
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

/* The stack pointers of the process's other threads that wait in a system call, from
 * /proc/self/task/TID/syscall ("NR ARG1 ... ARG6 SP PC"; "running" for a thread on a CPU, which
 * is asked again a few times, 1 ms apart). Same-process threads may read each other's file
 * without ptrace rights. Returns how many were stored in sp[0..cap). Reads through read(2) into
 * the caller's stack, below the part of it the scan reads. */
static size_t other_threads_sp(uintptr_t *sp, size_t cap)
{
    size_t n = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    pid_t self = (pid_t)syscall(SYS_gettid);
    struct dirent *e;
    while (n < cap && (e = readdir(d)) != NULL) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end || tid == self)
            continue;
        char path[64], text[512];
        snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", tid);
        for (int tries = 0; tries < 5; tries++) {
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                break;
            ssize_t got = read(fd, text, sizeof text - 1);
            close(fd);
            if (got <= 0)
                break;
            text[got] = '\0';
            if (strncmp(text, "running", 7) == 0) {
                struct timespec ms = {0, 1000000};
                nanosleep(&ms, NULL);
                continue;
            }
            /* The stack pointer is the next-to-last field. */
            char *f[10];
            int nf = 0;
            for (char *t = strtok_r(text, " \n", &end); t && nf < 10; t = strtok_r(NULL, " \n", &end))
                f[nf++] = t;
            uintptr_t v = nf >= 3 ? (uintptr_t)strtoull(f[nf - 2], NULL, 16) : 0;
            if (v)
                sp[n++] = v;
            break;
        }
    }
    closedir(d);
    return n;
}

/* Where the live part of the stack mapping [a, b) starts, given the other threads' stack
 * pointers: the lowest one in it, less the 128 bytes below the stack pointer that x86-64 code
 * may use without moving it (the red zone); a when none is in it. */
static uintptr_t live_from(uintptr_t a, uintptr_t b, const uintptr_t *sp, size_t nsp)
{
    uintptr_t from = b;
    for (size_t i = 0; i < nsp; i++)
        if (sp[i] >= a && sp[i] < b && sp[i] < from)
            from = sp[i];
    if (from == b)
        return a;
    from = from - a > 128 ? from - 128 : a;
    return from & ~(uintptr_t)7;
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
    check_span *v;
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
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W))
            lo = info->dlpi_addr + ph->p_vaddr;
        else if (ph->p_type == PT_TLS && tls)
            lo = (uintptr_t)info->dlpi_tls_data;
        else
            continue;
        if (ph->p_memsz == 0)
            continue;
        if (s->n == s->cap)
            return 1; /* more than were counted (an object loaded meanwhile): stop */
        s->v[s->n++] = (check_span){lo & ~(uintptr_t)7, (lo + ph->p_memsz + 7) & ~(uintptr_t)7};
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

long long check_reach_scan(const check_span *targets, size_t n, unsigned char *reached,
                           uintptr_t *found_at, const check_span *skip_in, size_t nskip,
                           uintptr_t stack_from)
{
    memset(reached, 0, n);
    if (n == 0)
        return 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t vec_pages = 1u << 14;
    size_t ix_bytes = n * sizeof(span_ix), skip_bytes = (nskip + 8) * sizeof(check_span);
    span_ix *ix = map_anon(ix_bytes);
    uint64_t *bitmap = map_anon(BITMAP_WORDS * sizeof(uint64_t));
    unsigned char *vec = map_anon(vec_pages);
    check_span *skip = map_anon(skip_bytes);
    /* The objects' writable segments (counted first), sorted: what of the mappings is data. */
    size_t nheaders = 0;
    dl_iterate_phdr(count_headers, &nheaders);
    seg_list segs = {NULL, 0, nheaders + 16, (uintptr_t)&check_reach_scan};
    segs.v = map_anon(segs.cap * sizeof *segs.v);
    long long total = -1;
    if (!ix || !bitmap || !vec || !skip || !segs.v)
        goto out;
    dl_iterate_phdr(add_object, &segs);
    sort_spans(segs.v, segs.n);
    for (size_t i = 0; i < n; i++)
        ix[i] = (span_ix){.lo = targets[i].lo, .hi = targets[i].hi, .index = i};
    sort_ix(ix, n);
    uintptr_t maxhi = 0;
    for (size_t i = 0; i < n; i++) {
        maxhi = ix[i].hi > maxhi ? ix[i].hi : maxhi;
        ix[i].maxhi = maxhi;
        uintptr_t g0 = ix[i].lo >> GRANULE_SHIFT, g1 = (ix[i].hi - 1) >> GRANULE_SHIFT;
        if (ix[i].hi <= ix[i].lo)
            continue;
        if (g1 - g0 >= (1u << BITMAP_BITS)) {
            memset(bitmap, 0xff, BITMAP_WORDS * sizeof(uint64_t));
            continue;
        }
        for (uintptr_t g = g0; g <= g1; g++) {
            size_t b = granule_bit(g << GRANULE_SHIFT);
            bitmap[b >> 6] |= (uint64_t)1 << (b & 63);
        }
    }
    /* What is not read: the caller's list, and the scan's own memory. */
    memcpy(skip, skip_in, nskip * sizeof *skip);
    skip[nskip++] = (check_span){(uintptr_t)ix, (uintptr_t)ix + ix_bytes};
    skip[nskip++] = (check_span){(uintptr_t)bitmap, (uintptr_t)bitmap + BITMAP_WORDS * 8};
    skip[nskip++] = (check_span){(uintptr_t)vec, (uintptr_t)vec + vec_pages};
    skip[nskip++] = (check_span){(uintptr_t)skip, (uintptr_t)skip + skip_bytes};
    skip[nskip++] = (check_span){(uintptr_t)segs.v, (uintptr_t)(segs.v + segs.cap)};
    sort_spans(skip, nskip);

    scan_state st = {ix, n, bitmap, reached, found_at, n, ix[0].lo, maxhi - ix[0].lo};
    FILE *maps = fopen("/proc/self/maps", "re");
    if (!maps)
        goto out;
    /* The exiting thread's stack: only from stack_from up (the frames below are dead). */
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (stack_from < here)
        stack_from = here; /* never this function's own locals, which hold the ranges */
    uintptr_t sp[1024];
    size_t nsp = other_threads_sp(sp, sizeof sp / sizeof sp[0]);
    char line[4096];
    total = 0;
    /* The mapping before, for what an anonymous mapping is: a thread's stack right above its
     * guard page. */
    unsigned long prev_end = 0;
    int prev_guard = 0;
    size_t si = 0; /* the first segment that may end above the mappings to come */
    while (st.left && fgets(line, sizeof line, maps)) {
        unsigned long a, b;
        char perms[8] = "";
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &a, &b, perms, &path_at) < 3)
            continue;
        char *path = path_at ? line + path_at : line + strlen(line);
        path[strcspn(path, "\n")] = '\0';
        int adjacent = a == prev_end, was_guard = prev_guard;
        prev_end = b;
        /* A thread's guard page: small (glibc's default is one page); the larger reserved
         * regions of other allocators (a sanitizer's heap) are not. */
        prev_guard = !path[0] && strncmp(perms, "---", 3) == 0 && b - a <= ((unsigned long)64 << 10);
        if (perms[0] != 'r' || perms[1] != 'w' || skipped_mapping(path))
            continue;
        if (strcmp(path, "[stack]") == 0 || (!path[0] && adjacent && was_guard)) {
            if (here >= a && here < b && stack_from < b)
                a = stack_from & ~(uintptr_t)7;
            else
                a = live_from(a, b, sp, nsp);
            total += (long long)scan_between(&st, a, b, skip, nskip, vec, vec_pages, page);
            continue;
        }
        /* Data: the parts of the mapping the objects' segments cover; the heap and other
         * anonymous memory are not read (see the comment at the top). */
        while (si < segs.n && segs.v[si].hi <= a)
            si++;
        for (size_t k = si; k < segs.n && segs.v[k].lo < b; k++) {
            uintptr_t lo = segs.v[k].lo > a ? segs.v[k].lo : a;
            uintptr_t hi = segs.v[k].hi < b ? segs.v[k].hi : b;
            if (lo < hi)
                total += (long long)scan_between(&st, lo, hi, skip, nskip, vec, vec_pages, page);
        }
    }
    fclose(maps);
out:
    if (segs.v)
        munmap(segs.v, segs.cap * sizeof *segs.v);
    if (ix)
        munmap(ix, ix_bytes);
    if (bitmap)
        munmap(bitmap, BITMAP_WORDS * sizeof(uint64_t));
    if (vec)
        munmap(vec, vec_pages);
    if (skip)
        munmap(skip, skip_bytes);
    return total;
}
