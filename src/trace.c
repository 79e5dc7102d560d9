/* The event log: per-thread buffers, one writer thread, Chrome trace event JSON (trace.h).
 *
 * Recording must stay far cheaper than the allocation it records (the target is under 100 ns
 * for an allocation and its release together), so a recording thread only fills a slot of its
 * own buffer: a timestamp, the record's fields and the live bytes of the (kind, device) pair
 * from one atomic add. Text is made on the writer thread, one JSON event a line, so that a
 * trace cut short by a crash is still readable line by line up to where it stops. Events of
 * different threads reach the file out of order (a buffer is written when it is full); every
 * event has its timestamp and readers sort by it. The end of the file carries the stacks (each
 * once, symbolized then, as reports do at exit) and a marker that the trace is complete.
 *
 * The file is written with write(2), never through stdio: a child made by fork() has a copy of
 * whatever a stdio buffer held and would write it again at its exit. It is opened without
 * blocking (a FIFO with no reader is refused) and locked while written (a second process
 * writes FILE.PID). The finish at exit may run in a signal handler that interrupted a thread
 * holding or waiting for the trace's lock: it waits a bounded time for the lock and for the
 * writer's batch in progress, writes what is left itself without malloc, and when the lock
 * stays busy ends the file with an event that says the trace is incomplete
 * (docs/reliability.md). */
#define _GNU_SOURCE
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backtrace.h"
#include "sigsafe.h"
#include "trace_text.h"


#define BATCH 1024
/* Full buffers waiting for the writer, at most: a program that allocates faster than the
 * writer writes waits for it here rather than growing without bound (64 Mi events a second
 * would otherwise take 7 GiB a minute). 256 buffers are 28 MiB. */
#define MAX_QUEUED 256

typedef struct trace_buf {
    struct trace_buf *next;
    atomic_uint n;
    trace_ev ev[BATCH];
} trace_buf;

/* A recording thread's state, in the list that the exit-time finish walks. */
typedef struct trace_slot {
    struct trace_slot *next;
    _Atomic(trace_buf *) cur;
} trace_slot;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* everything below */
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static trace_slot *slots;
static trace_buf *queue_head, *queue_tail, *spare;
static unsigned queued;
static pthread_cond_t drained = PTHREAD_COND_INITIALIZER;
static atomic_uint_fast64_t waits;
static int stopping, opened, closed;
/* The writer is starting or writing a batch, and may be inside malloc (fork waits: see
 * before_fork); 0 once it waits for work. */
static int writer_busy;
static pthread_t writer;
static void (*writer_setup)(void);
static pthread_key_t slot_key;

static int fd = -1;
static char path_text[4096];
static char path_shown[4 * sizeof path_text]; /* path_text made visible, for messages */
static const char *tool_name = "gpumem";
static int write_failed;
static atomic_uint_fast64_t recorded, dropped;
static long pid;

/* Who writes the file: the writer thread between batches (idle) or during one (busy), or, for
 * good, the exit path, which takes it only from an idle writer. Bytes written, for the exit
 * path to tell a writer that is slow from one that is stuck. */
enum { FILE_WRITER_IDLE, FILE_WRITER_BUSY, FILE_EXIT };
static atomic_int file_owner;
static atomic_uint_fast64_t written;
static atomic_int ended;

/* The exit path's bounds: the lock (as the exit report waits for registry shards), and a
 * writer in the middle of a batch that formats and writes nothing at all for this long. */
#define EXIT_LOCK_NS 50000000L
#define EXIT_STALL_NS 2000000000L
/* How long fork() waits for a busy writer (before_fork). */
#define FORK_WAIT_S 2

static atomic_uint_fast64_t live_bytes[GPUMEM_KIND_COUNT_][GPUMEM_STATS_DEVICES];

static _Thread_local trace_slot *my_slot;

/* A fresh buffer: a spare one when there is, else from malloc. Under lock. */
static trace_buf *buf_get(void)
{
    trace_buf *b = spare;
    if (b)
        spare = b->next;
    else
        b = malloc(sizeof *b);
    if (b) {
        b->next = NULL;
        atomic_store_explicit(&b->n, 0, memory_order_relaxed);
    }
    return b;
}

/* Hands a buffer to the writer. Under lock. */
static void buf_queue(trace_buf *b)
{
    b->next = NULL;
    if (queue_tail)
        queue_tail->next = b;
    else
        queue_head = b;
    queue_tail = b;
    queued++;
    pthread_cond_signal(&wake);
}

/* Written buffers back to the spares. Under lock. */
static void buf_spare(trace_buf *list)
{
    while (list) {
        trace_buf *next = list->next;
        list->next = spare;
        spare = list;
        list = next;
    }
}

/* A thread that ends gives its buffer to the writer. */
static void slot_release(void *arg)
{
    trace_slot *s = arg;
    pthread_mutex_lock(&lock);
    trace_buf *b = atomic_exchange(&s->cur, NULL);
    if (b && atomic_load(&b->n) > 0 && !closed)
        buf_queue(b);
    else if (b)
        free(b);
    for (trace_slot **p = &slots; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    pthread_mutex_unlock(&lock);
    free(s);
    my_slot = NULL; /* destructors run on the thread that ends: an event after this starts anew */
}

static trace_slot *slot_make(void)
{
    trace_slot *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_lock(&lock);
    if (closed) {
        pthread_mutex_unlock(&lock);
        free(s);
        return NULL;
    }
    atomic_init(&s->cur, buf_get());
    s->next = slots;
    slots = s;
    pthread_mutex_unlock(&lock);
    pthread_setspecific(slot_key, s);
    return s;
}

/* The slot to fill for this thread, or NULL (the event is dropped); *out is its buffer. */
static trace_ev *ev_next(trace_buf **out)
{
    trace_slot *s = my_slot;
    if (GPUMEM__UNLIKELY(!s) && !(s = my_slot = slot_make())) {
        atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
        return NULL;
    }
    trace_buf *b = atomic_load_explicit(&s->cur, memory_order_acquire);
    if (GPUMEM__UNLIKELY(!b || atomic_load_explicit(&b->n, memory_order_relaxed) == BATCH)) {
        pthread_mutex_lock(&lock);
        b = atomic_load_explicit(&s->cur, memory_order_relaxed);
        if (b && !closed)
            buf_queue(b);
        if (queued > MAX_QUEUED && !closed) {
            atomic_fetch_add_explicit(&waits, 1, memory_order_relaxed);
            while (queued > MAX_QUEUED / 2 && !closed)
                pthread_cond_wait(&drained, &lock);
        }
        b = closed ? NULL : buf_get();
        atomic_store_explicit(&s->cur, b, memory_order_release);
        pthread_mutex_unlock(&lock);
        if (!b) {
            atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
            return NULL;
        }
    }
    *out = b;
    return &b->ev[atomic_load_explicit(&b->n, memory_order_relaxed)];
}

/* Publishes the slot ev_next gave: the writer reads only events below n, and only this
 * thread writes n (a plain store, no locked instruction). */
static void ev_done(trace_buf *b)
{
    unsigned n = atomic_load_explicit(&b->n, memory_order_relaxed);
    atomic_store_explicit(&b->n, n + 1, memory_order_release);
}

/* An allocation's or a release's event, with what the record says filled in; the kind's live
 * bytes on its device move by the record's bytes (up for an allocation, down for a release).
 * NULL when the event cannot be kept. */
static trace_ev *rec_event(trace_buf **b, int type, const gpumem__rec *r)
{
    trace_ev *e = ev_next(b);
    if (!e)
        return NULL;
    atomic_uint_fast64_t *live = &live_bytes[r->kind][gpumem__dev_slot(r->device)];
    e->type = type;
    e->ns = gpumem__now_ns();
    e->id = r->seq;
    e->bytes = r->bytes;
    e->live = type == EV_ALLOC
                  ? atomic_fetch_add_explicit(live, r->bytes, memory_order_relaxed) + r->bytes
                  : atomic_fetch_sub_explicit(live, r->bytes, memory_order_relaxed) - r->bytes;
    e->base = r->base;
    e->site = r->site;
    e->stack = r->stack;
    e->device = r->device;
    e->kind = r->kind;
    return e;
}

void gpumem__trace_alloc(const gpumem__rec *r)
{
    if (!gpumem__tracing())
        return;
    trace_buf *b;
    trace_ev *e = rec_event(&b, EV_ALLOC, r);
    if (!e)
        return;
    e->stream = (uintptr_t)r->stream;
    e->thread = r->thread;
    ev_done(b);
}

void gpumem__trace_release(const gpumem__rec *r, gpumem_site site, const char *call)
{
    if (!gpumem__tracing())
        return;
    trace_buf *b;
    trace_ev *e = rec_event(&b, EV_RELEASE, r);
    if (!e)
        return;
    e->where = site;
    if (!site.file && call)
        e->where.func = call;
    e->thread = gpumem__thread_id();
    ev_done(b);
}

void gpumem__trace_checkpoint(uint64_t seq)
{
    if (!gpumem__tracing())
        return;
    trace_buf *b;
    trace_ev *e = ev_next(&b);
    if (!e)
        return;
    memset(e, 0, sizeof *e);
    e->type = EV_CHECKPOINT;
    e->ns = gpumem__now_ns();
    e->id = seq;
    e->thread = gpumem__thread_id();
    ev_done(b);
}

void gpumem__trace_pool(const void *pool, int kind, int device, uint64_t reserved,
                        uint64_t in_use)
{
    if (!gpumem__tracing())
        return;
    trace_buf *b;
    trace_ev *e = ev_next(&b);
    if (!e)
        return;
    memset(e, 0, sizeof *e);
    e->type = EV_POOL;
    e->ns = gpumem__now_ns();
    e->base = (uintptr_t)pool;
    e->kind = (unsigned char)kind;
    e->device = device;
    e->bytes = reserved;
    e->live = in_use;
    e->thread = gpumem__thread_id();
    ev_done(b);
}

void gpumem__trace_failed(int kind, uint64_t bytes, int device, gpumem_site site, uint32_t stack,
                          int code, int cuda_error)
{
    if (!gpumem__tracing())
        return;
    trace_buf *b;
    trace_ev *e = ev_next(&b);
    if (!e)
        return;
    memset(e, 0, sizeof *e);
    e->type = EV_FAILED;
    e->ns = gpumem__now_ns();
    e->bytes = bytes;
    e->kind = (unsigned char)(kind > 0 && kind < GPUMEM_KIND_COUNT_ ? kind : 0);
    e->live = atomic_load_explicit(&live_bytes[e->kind][gpumem__dev_slot(device)],
                                   memory_order_relaxed);
    e->device = device;
    e->site = site;
    e->stack = stack;
    e->code = code;
    e->cuda_error = cuda_error;
    e->thread = gpumem__thread_id();
    ev_done(b);
}

void gpumem__trace_counts(uint64_t *rec, uint64_t *drop, uint64_t *waited)
{
    if (waited)
        *waited = atomic_load(&waits);
    if (rec)
        *rec = atomic_load(&recorded);
    if (drop)
        *drop = atomic_load(&dropped);
}

/* What the option that names the trace is called, for hints. */
static const char *option_name(void)
{
    return strcmp(tool_name, "gpumem") == 0 ? "GPUMEM_TRACE" : "--trace";
}

/* A failed write, said once on stderr with write(2): the exit path must not wait for stdio's
 * lock of stderr, which the code that a signal interrupted may hold. */
static void say_failed(const char *what, int err)
{
    gpumem__sink o;
    gpumem__sink_fd(&o, STDERR_FILENO);
    gpumem__sink_str(&o, "gpumem: error: ");
    gpumem__sink_str(&o, what);
    gpumem__sink_visible(&o, path_text);
    gpumem__sink_str(&o, " failed (");
    gpumem__sink_str(&o, err == EAGAIN ? "its reader took nothing for 2 s" : strerror(err));
    gpumem__sink_str(&o, "); the trace is incomplete\n  hint: free space there, or choose "
                         "another file with ");
    gpumem__sink_str(&o, option_name());
    gpumem__sink_str(&o, "\n");
    gpumem__sink_flush(&o);
}

/* Writes p[0..n) to the file; returns 0 or the errno of the failure. At exit the file does
 * not block (see finish_at_exit): a FIFO that stays full for 2 s fails with EAGAIN. */
static int write_all(const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd wait = {fd, POLLOUT, 0};
            if (poll(&wait, 1, 2000) > 0 || errno == EINTR)
                continue;
            return EAGAIN;
        }
        if (w <= 0)
            return w < 0 ? errno : EIO;
        p += w;
        n -= (size_t)w;
        atomic_fetch_add_explicit(&written, (uint64_t)w, memory_order_relaxed);
    }
    return 0;
}

/* Writes t out (writer thread or the finish, never both at once); a failure is reported
 * once, and nothing more is written after it. */
static void flush_text(gpumem__text *t)
{
    int err;
    if (!write_failed && t->n && (err = write_all(t->p, t->n)) != 0) {
        write_failed = err;
        say_failed("writing the trace to ", err);
    }
    t->n = 0;
}

static void write_buffer(gpumem__text *t, trace_buf *b)
{
    unsigned n = atomic_load_explicit(&b->n, memory_order_acquire);
    atomic_fetch_add_explicit(&recorded, n, memory_order_relaxed);
    for (unsigned i = 0; i < n; i++)
        gpumem__trace_event_text(t, &b->ev[i]);
    if (t->n > (1u << 20))
        flush_text(t);
}

/* The writer's batch and text, where a leak checker at exit finds them while the writer is
 * blocked (a FIFO whose reader stopped): not only on the writer's stack. Writer thread only. */
static trace_buf *writing;
static gpumem__text writer_text;

static void *writer_main(void *arg)
{
    (void)arg;
    if (writer_setup)
        writer_setup();
    gpumem__text *t = &writer_text;
    pthread_mutex_lock(&lock);
    for (;;) {
        writer_busy = 0;
        pthread_cond_broadcast(&drained); /* recorders waiting for room, and fork */
        while (!queue_head && !stopping)
            pthread_cond_wait(&wake, &lock);
        writing = queue_head;
        queue_head = queue_tail = NULL;
        queued = 0;
        if (!writing && stopping)
            break;
        writer_busy = 1;
        pthread_mutex_unlock(&lock);
        int idle = FILE_WRITER_IDLE;
        if (!atomic_compare_exchange_strong(&file_owner, &idle, FILE_WRITER_BUSY))
            return NULL; /* the exit path took the file and ended it */
        for (trace_buf *b = writing; b; b = b->next)
            write_buffer(t, b);
        flush_text(t);
        atomic_store(&file_owner, FILE_WRITER_IDLE);
        pthread_mutex_lock(&lock);
        buf_spare(writing);
        writing = NULL;
    }
    pthread_mutex_unlock(&lock);
    gpumem__text_free(t);
    return NULL;
}

/* ts as the trace event format writes it, with the sink (the exit path's output). */
static void sink_ts(gpumem__sink *o, uint64_t ns)
{
    char frac[3] = {(char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
                    (char)('0' + ns % 10)};
    gpumem__sink_u64(o, ns / 1000);
    gpumem__sink_mem(o, ".", 1);
    gpumem__sink_mem(o, frac, 3);
}

/* The end of a trace that cannot be finished: an event that says it is incomplete and why,
 * then the closing brackets, so that the file is still one JSON document. No gpumem_end: a
 * reader takes the trace as cut short. Written through the sink: no malloc. */
static void write_incomplete_end(const char *why)
{
    gpumem__sink o;
    gpumem__sink_fd(&o, fd);
    gpumem__sink_str(&o, "{\"ph\":\"M\",\"pid\":");
    gpumem__sink_i64(&o, pid);
    gpumem__sink_str(&o, ",\"tid\":0,\"ts\":");
    sink_ts(&o, gpumem__now_ns());
    gpumem__sink_str(&o, ",\"name\":\"gpumem_incomplete\",\"args\":{\"reason\":");
    gpumem__sink_json_str(&o, why);
    gpumem__sink_str(&o, ",\"events\":");
    gpumem__sink_u64(&o, atomic_load(&recorded));
    gpumem__sink_str(&o, "}}\n],\n\"stackFrames\":{\n}}\n");
    gpumem__sink_flush(&o);
}

/* "the trace FILE is incomplete: WHY; TAIL" on stderr, with write(2). */
static void warn_incomplete(const char *why, const char *tail)
{
    gpumem__sink o;
    gpumem__sink_fd(&o, STDERR_FILENO);
    gpumem__sink_str(&o, "gpumem: warning: the trace ");
    gpumem__sink_visible(&o, path_text);
    gpumem__sink_str(&o, " is incomplete: ");
    gpumem__sink_str(&o, why);
    gpumem__sink_str(&o, tail);
    gpumem__sink_flush(&o);
}

static uint64_t writer_progress(void)
{
    return atomic_load(&written) + atomic_load(&recorded);
}

/* The file becomes the finish's, from a writer between two batches: the writer touches
 * neither the file nor its own tables (names, stacks) again. */
static int file_claimed(void)
{
    int idle = FILE_WRITER_IDLE;
    return atomic_compare_exchange_strong(&file_owner, &idle, FILE_EXIT);
}

/* Takes the file from the writer, waiting for as long as it makes progress (formats or writes
 * something) at least every EXIT_STALL_NS: a slow disk is waited for, a FIFO whose reader
 * stopped reading or a lock that will never be free is not. Returns whether it was taken. */
static int claim_file(void)
{
    uint64_t seen_progress = writer_progress(), since = gpumem__now_ns();
    while (!file_claimed()) {
        uint64_t progress = writer_progress(), now = gpumem__now_ns();
        if (progress != seen_progress) {
            seen_progress = progress;
            since = now;
        } else if (now - since >= (uint64_t)EXIT_STALL_NS) {
            return 0; /* timed by the clock: on a loaded machine a 1 ms sleep takes longer */
        }
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
    }
    return 1;
}

/* Stops recording and takes every buffer not written yet: the queue and each thread's
 * current one. Under lock. A thread still inside a hook may finish its event after this,
 * unseen (the buffer stays allocated, so that is harmless). */
static trace_buf *take_rest(void)
{
    atomic_store(&gpumem__hot.trace_on, 0);
    closed = 1;
    for (trace_slot *s = slots; s; s = s->next) {
        trace_buf *b = atomic_exchange(&s->cur, NULL);
        if (b)
            buf_queue(b);
    }
    trace_buf *rest = queue_head;
    queue_head = queue_tail = NULL;
    queued = 0;
    return rest;
}

/* Writes what the writer left, the stacks and the end, and closes the file, which the caller
 * has claimed. At exit nothing here calls malloc (see no_malloc), but symbolizing stacks. */
static int end_file(trace_buf *rest, int at_exit)
{
    gpumem__text t = {.mapped = at_exit};
    gpumem__trace_text_no_malloc(at_exit);
    for (trace_buf *b = rest; b; b = b->next)
        write_buffer(&t, b);
    uint64_t ns = gpumem__now_ns();
    gpumem__trace_end_text(&t, ns, atomic_load(&recorded), atomic_load(&dropped));
    flush_text(&t);
    gpumem__text_free(&t);
    if (close(fd) != 0 && errno != EINTR && !write_failed) {
        write_failed = errno;
        say_failed("closing the trace ", write_failed);
    }
    fd = -1;
    return write_failed ? -1 : 0;
}

/* At exit, perhaps in a signal handler that interrupted anything: the lock is waited for a
 * bounded time (as the exit report waits for registry shards), the writer is never waited
 * for to wake up (a wake-up meant for it may have gone to the interrupted thread), only for
 * its batch in progress, which needs no lock; what it left, this thread writes itself, with
 * the lock held so that no thread records or ends meanwhile. */
static void finish_at_exit(void)
{
    long budget = EXIT_LOCK_NS;
    int locked = gpumem__trylock_for(&lock, &budget);
    if (locked && (!opened || closed)) {
        pthread_mutex_unlock(&lock);
        return;
    }
    if (atomic_exchange(&ended, 1)) {
        if (locked)
            pthread_mutex_unlock(&lock);
        return;
    }
    atomic_store(&gpumem__hot.trace_on, 0);
    trace_buf *rest = locked ? take_rest() : NULL;
    int claimed = claim_file();
    int flags = claimed ? fcntl(fd, F_GETFL) : -1; /* a reader that stopped: wait 2 s at most */
    if (flags != -1)
        fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    if (!claimed) {
        warn_incomplete("its writer made no progress for 2 s at exit (a reader that stopped "
                        "reading, or a lock held by the code that exit() interrupted)",
                        "; it ends where the writer stopped\n");
    } else if (!locked) {
        const char *why = "its lock was held by the code that exit() interrupted (exit() "
                          "called from a signal handler?)";
        if (!write_failed)
            write_incomplete_end(why);
        warn_incomplete(why, "; events not written by then are not in it\n");
    } else {
        end_file(rest, 1);
    }
    if (locked) {
        buf_spare(rest); /* not freed: free may wait for malloc's lock */
        pthread_mutex_unlock(&lock);
    }
}

int gpumem__trace_close(void)
{
    pthread_mutex_lock(&lock);
    if (!opened || closed || atomic_exchange(&ended, 1)) {
        int failed = write_failed != 0;
        pthread_mutex_unlock(&lock);
        return failed ? -1 : 0;
    }
    trace_buf *rest = take_rest();
    stopping = 1;
    pthread_cond_signal(&wake);
    pthread_cond_broadcast(&drained);
    pthread_mutex_unlock(&lock);
    pthread_join(writer, NULL);
    file_claimed();
    int rc = end_file(rest, 0);
    while (rest) {
        trace_buf *next = rest->next;
        free(rest);
        rest = next;
    }
    return rc;
}

/* fork() happens with the lock held, so that the child's copy of the state is consistent.
 * The child has no writer thread and shares the file with its parent: a child that goes on
 * without exec records nothing (one that execs starts afresh).
 *
 * It also waits, 2 s at most, for a writer that is starting or writing a batch to be idle:
 * such a writer may be inside malloc, and an allocator that takes no lock around fork()
 * leaves the lock it held taken in the child for ever. glibc's malloc does take its locks;
 * AddressSanitizer's allocator in GCC 12's runtime does not, and a child forked right after
 * the trace opened then hung at exit in the leak check, in about 3 % of forks (2 busy
 * cores). A writer that stays busy longer (a FIFO nobody reads) is not waited for further. */
static void before_fork(void)
{
    pthread_mutex_lock(&lock);
    if (!writer_busy || atomic_load(&ended))
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until); /* the clock of a condition made by the initializer */
    until.tv_sec += FORK_WAIT_S;
    while (writer_busy && !atomic_load(&ended))
        if (pthread_cond_timedwait(&drained, &lock, &until) == ETIMEDOUT)
            break;
}

static void in_parent(void)
{
    pthread_mutex_unlock(&lock);
}

static void in_child(void)
{
    atomic_store(&gpumem__hot.trace_on, 0);
    closed = 1;
    writer_busy = 0; /* the child has no writer: its own forks wait for none */
    fd = -1; /* the parent's: the child never writes to it */
    pthread_mutex_unlock(&lock);
}

/* fork.c's handlers call the trace's first: the trace frees buffers under its lock, and free
 * may take the registration cache's lock (reghooks.c), which comes last. */
void gpumem__trace_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_PREPARE)
        before_fork();
    else if (phase == GPUMEM__FORK_PARENT)
        in_parent();
    else if (opened)
        in_child();
    else
        pthread_mutex_unlock(&lock); /* no trace in the parent: the child may open its own */
}

/* The trace's file, opened without blocking: a FIFO with no reader is refused (ENXIO) rather
 * than waited for. A regular file is locked for as long as this process writes it; one that
 * another process holds (its trace is going there) is left to it: -2. Else the descriptor, or
 * -1 with errno. */
static int open_file(const char *path)
{
    int f;
    do
        f = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
    while (f < 0 && errno == EINTR);
    if (f < 0)
        return -1;
    struct stat st;
    if (fstat(f, &st) == 0 && S_ISREG(st.st_mode)) {
        if (flock(f, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
            close(f);
            return -2;
        }
        if (ftruncate(f, 0) != 0) {
            int err = errno;
            close(f);
            errno = err;
            return -1;
        }
    }
    int flags = fcntl(f, F_GETFL); /* a FIFO with a reader is a stream like any other now */
    if (flags != -1)
        fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
    return f;
}

/* "the trace's file name ... is longer than a path may be" for a name of len bytes. */
static int refuse_long_name(size_t len)
{
    fprintf(stderr,
            "gpumem: error: the trace's file name is %zu bytes long with %%p replaced, longer "
            "than a path may be (%zu); nothing will be recorded\n"
            "  hint: choose a shorter name with %s\n",
            len, sizeof path_text - 1, option_name());
    return -1;
}

/* Opens the file pattern names (%p: the process id) into fd and path_text, or says on stderr
 * why not. When another process is writing its trace to that file, this one writes to
 * FILE.PID instead, and says so. */
static int file_open(const char *pattern)
{
    long me = (long)getpid();
    size_t len = gpumem__path_expand(pattern, me, 0, path_text, sizeof path_text);
    if (len >= sizeof path_text)
        return refuse_long_name(len);
    gpumem__visible(path_text, path_shown, sizeof path_shown);
    int f = open_file(path_text);
    if (f == -2) {
        char shared[sizeof path_text];
        memcpy(shared, path_text, len + 1);
        len = gpumem__path_expand(pattern, me, 1, path_text, sizeof path_text);
        if (len >= sizeof path_text)
            return refuse_long_name(len);
        gpumem__visible(path_text, path_shown, sizeof path_shown);
        if ((f = open_file(path_text)) >= 0) {
            char shared_shown[sizeof path_shown];
            gpumem__visible(shared, shared_shown, sizeof shared_shown);
            fprintf(stderr,
                    "gpumem: warning: another process is writing its trace to %s; this one "
                    "(pid %ld) writes to %s\n  hint: put %%p in %s to give each process a file "
                    "of its own\n",
                    shared_shown, me, path_shown, option_name());
        }
        else if (f == -2)
            errno = EBUSY;
    }
    if (f >= 0) {
        fd = f;
        return 0;
    }
    if (errno == ENXIO)
        fprintf(stderr,
                "gpumem: warning: the trace file %s is a FIFO that no process reads; nothing "
                "will be recorded\n  hint: start its reader first, or name a regular file with "
                "%s\n",
                path_shown, option_name());
    else
        fprintf(stderr,
                "gpumem: error: cannot write the trace to %s (%s); nothing will be recorded\n"
                "  hint: check that the folder exists and can be written\n",
                path_shown, strerror(errno));
    return -1;
}

/* The process's rank in a parallel job, for the head (gpumem__trace_set_rank), or -1. */
static long trace_rank = -1;

void gpumem__trace_set_rank(long rank)
{
    trace_rank = rank;
}

/* The first lines, before any event. */
static void write_head(const char *tool)
{
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    gpumem__text t = {0};
    gpumem__trace_head_text(&t, tool, gpumem__now_ns(),
                            (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec, trace_rank);
    flush_text(&t);
    gpumem__text_free(&t);
}

/* The writer takes no asynchronous signal: a handler that calls exit() then never runs on it,
 * and the exit path can wait for it to finish. */
static int writer_start(void)
{
    sigset_t all, old;
    sigfillset(&all);
    int sync_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
    for (size_t i = 0; i < sizeof sync_signals / sizeof *sync_signals; i++)
        sigdelset(&all, sync_signals[i]);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    writer_busy = 1;
    int rc = pthread_create(&writer, NULL, writer_main, NULL);
    if (rc != 0)
        writer_busy = 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int gpumem__trace_open(const char *path, const char *tool, void (*writer_init)(void))
{
    pthread_mutex_lock(&lock);
    if (opened) {
        pthread_mutex_unlock(&lock);
        return 0;
    }
    tool_name = tool;
    if (file_open(path) != 0) {
        pthread_mutex_unlock(&lock);
        return -1;
    }
    opened = 1;
    pid = (long)getpid();
    gpumem__trace_text_pid(pid);
    writer_setup = writer_init;
    pthread_key_create(&slot_key, slot_release);
    write_head(tool);
    if (writer_start() != 0) {
        close(fd);
        fd = -1;
        closed = 1;
        pthread_mutex_unlock(&lock);
        fprintf(stderr, "gpumem: error: cannot start the trace's writer thread; nothing will "
                        "be recorded in %s\n", path_shown);
        return -1;
    }
    gpumem__fork_setup(); /* fork.c calls the handlers above, in the library's lock order */
    atexit(finish_at_exit);
    atomic_store(&gpumem__hot.trace_on, 1);
    pthread_mutex_unlock(&lock);
    return 0;
}
