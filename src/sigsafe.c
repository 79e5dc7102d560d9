/* Async-signal-safe output (sigsafe.h). Everything here is made of write(2), nanosleep(2),
 * poll(2), pthread_mutex_trylock and plain arithmetic: no stdio (except the caller's stream for
 * on-demand reports), no allocation, no lock that can be waited for forever. */
#define _POSIX_C_SOURCE 200809L
#include "sigsafe.h"

#include "backtrace.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void gpumem__sink_fd(gpumem__sink *s, int fd)
{
    s->fd = fd;
    s->file = NULL;
    s->error = 0;
    s->len = 0;
}

void gpumem__sink_file(gpumem__sink *s, FILE *f)
{
    gpumem__sink_fd(s, -1);
    s->file = f;
}

/* A descriptor opened without blocking (a FIFO: its reader may have stopped reading) that
 * stays full this long is given up: a report never waits for ever. */
#define FULL_PIPE_MS 2000

/* Waits up to FULL_PIPE_MS for fd to take more; 0 when it will, else EAGAIN. */
static int wait_writable(int fd)
{
    struct pollfd p = {fd, POLLOUT, 0};
    int n;
    do
        n = poll(&p, 1, FULL_PIPE_MS);
    while (n < 0 && errno == EINTR);
    return n > 0 ? 0 : EAGAIN;
}

static void drain(gpumem__sink *s)
{
    size_t off = 0;
    while (off < s->len && !s->error) {
        if (s->file) {
            size_t n = fwrite(s->buf + off, 1, s->len - off, s->file);
            if (n == 0)
                s->error = ferror(s->file) && errno ? errno : EIO;
            off += n;
            continue;
        }
        ssize_t n = write(s->fd, s->buf + off, s->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            s->error = wait_writable(s->fd);
        else if (n <= 0)
            s->error = n < 0 ? errno : EIO;
        else
            off += (size_t)n;
    }
    s->len = 0;
}

void gpumem__sink_mem(gpumem__sink *s, const char *p, size_t n)
{
    while (n) {
        if (s->len == sizeof s->buf)
            drain(s);
        size_t take = sizeof s->buf - s->len;
        if (take > n)
            take = n;
        memcpy(s->buf + s->len, p, take);
        s->len += take;
        p += take;
        n -= take;
    }
}

void gpumem__sink_str(gpumem__sink *s, const char *str)
{
    gpumem__sink_mem(s, str ? str : "(null)", strlen(str ? str : "(null)"));
}

void gpumem__sink_visible(gpumem__sink *s, const char *str)
{
    char piece[GPUMEM__VISIBLE_PIECE_MAX];
    for (size_t took; str && *str; str += took)
        gpumem__sink_mem(s, piece, gpumem__visible_piece(str, piece, &took));
}

void gpumem__sink_u64(gpumem__sink *s, uint64_t v)
{
    char b[21];
    gpumem__sink_str(s, gpumem__fmt_u64(v, b));
}

void gpumem__sink_i64(gpumem__sink *s, int64_t v)
{
    if (v < 0) {
        gpumem__sink_mem(s, "-", 1);
        gpumem__sink_u64(s, (uint64_t)0 - (uint64_t)v);
    } else {
        gpumem__sink_u64(s, (uint64_t)v);
    }
}

void gpumem__sink_hex(gpumem__sink *s, uint64_t v)
{
    char b[19];
    int n = 18;
    b[n] = '\0';
    do {
        b[--n] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    b[--n] = 'x';
    b[--n] = '0';
    gpumem__sink_str(s, b + n);
}

void gpumem__sink_pad(gpumem__sink *s, const char *str, int width)
{
    for (int i = (int)strlen(str); i < width; i++)
        gpumem__sink_mem(s, " ", 1);
    gpumem__sink_str(s, str);
}

void gpumem__sink_json_str(gpumem__sink *s, const char *str)
{
    if (!str) {
        gpumem__sink_str(s, "null");
        return;
    }
    gpumem__sink_mem(s, "\"", 1);
    while (*str) {
        char piece[GPUMEM__JSON_PIECE_MAX];
        size_t took, n = gpumem__json_piece(str, piece, &took);
        gpumem__sink_mem(s, piece, n);
        str += took;
    }
    gpumem__sink_mem(s, "\"", 1);
}

void gpumem__sink_site(gpumem__sink *s, gpumem_site site)
{
    if (!site.file) {
        gpumem__sink_str(s, "(unknown site)");
        return;
    }
    gpumem__sink_str(s, site.file);
    gpumem__sink_mem(s, ":", 1);
    gpumem__sink_i64(s, site.line);
    if (site.func && *site.func) {
        gpumem__sink_str(s, " (");
        gpumem__sink_str(s, site.func);
        gpumem__sink_mem(s, ")", 1);
    }
}

int gpumem__sink_flush(gpumem__sink *s)
{
    drain(s);
    return s->error;
}

int gpumem__trylock_for(pthread_mutex_t *m, long *budget_ns)
{
    /* A running thread holds a shard for well under a microsecond at a time but takes it
     * again and again: a burst of tries catches a gap, a sleep lets it run when it is
     * descheduled. */
    const long step = 50000; /* 50 us between bursts */
    for (;;) {
        for (int i = 0; i < 256; i++)
            if (pthread_mutex_trylock(m) == 0)
                return 1;
        if (*budget_ns <= 0)
            return 0;
        struct timespec d = {0, *budget_ns < step ? *budget_ns : step};
        nanosleep(&d, NULL);
        *budget_ns -= d.tv_nsec;
    }
}

/* As gpumem__stack_print: "at"/"by" lines, files under the current folder relative to it, a
 * function inlined into its caller ending its line with ", inlined into:". */
int gpumem__sink_stack(gpumem__sink *o, uint32_t stack, const char *indent, int cached_only)
{
    gpumem__frame frames[GPUMEM__STACK_MAX_FRAMES];
    int nf = !stack ? 0
             : cached_only ? gpumem__stack_frames_cached(stack, frames, GPUMEM__STACK_MAX_FRAMES)
                           : gpumem__stack_frames(stack, frames, GPUMEM__STACK_MAX_FRAMES);
    if (nf <= 0)
        return nf;
    char cwd[4096];
    size_t cwd_len = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
    for (int i = 0; i < nf; i++) {
        const gpumem__frame *f = &frames[i];
        gpumem__sink_str(o, indent);
        gpumem__sink_str(o, i == 0 ? "at " : "by ");
        gpumem__sink_str(o, f->func);
        gpumem__sink_str(o, " (");
        if (f->file) {
            const char *file = f->file;
            if (cwd_len > 1 && strncmp(file, cwd, cwd_len) == 0 && file[cwd_len] == '/')
                file += cwd_len + 1;
            gpumem__sink_str(o, file);
            gpumem__sink_str(o, ":");
            gpumem__sink_i64(o, f->line);
            if (f->inlined) {
                gpumem__sink_str(o, "), inlined into:\n");
                continue;
            }
        } else if (f->object) {
            gpumem__sink_str(o, "in ");
            gpumem__sink_str(o, f->object);
        } else {
            gpumem__sink_hex(o, f->pc);
        }
        gpumem__sink_str(o, ")\n");
    }
    return nf;
}
