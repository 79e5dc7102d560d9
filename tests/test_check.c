/* gpumem check's engine, driven by synthetic event streams through the entry points its CUPTI
 * and free() front ends call (tools/check/engine.h): findings, report text (golden files),
 * suppressions, JSON, status files and children's file names.
 *
 * The engine's state is the process's (one report per process, as in a checked program), so
 * every scenario runs in a child process of its own and the parent reads what it wrote. */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef GPUMEM_HAVE_JANSSON
#include <jansson.h>
#endif

#include "backtrace.h"
#include "engine.h"
#include "engine_int.h"
#include "settings.h"
#include "gpumem.h"
#include "harness.h"
#include "suppress.h"

static char dir[] = "/tmp/gpumem-test-check.XXXXXX";
static uintptr_t main_frame; /* main's frame: see run_scenario */

/* Fake addresses, as CUDA's would look: printed as they are, so golden files hold them. */
#define DEV 0x7f0000000000ull
#define PIN 0x7e0000000000ull
#define MAN 0x7d0000000000ull

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&buf, &cap, '\0', f);
    fclose(f);
    if (n < 0) {
        free(buf);
        return strdup("");
    }
    return buf;
}

/* "==12345== " -> "==PID== ", so that golden files do not depend on the process id. */
static char *normalize(char *text)
{
    if (!text)
        return NULL;
    char *out = malloc(strlen(text) + 1), *o = out;
    for (const char *c = text; *c;) {
        if (c[0] == '=' && c[1] == '=' && c[2] >= '0' && c[2] <= '9') {
            const char *e = c + 2;
            while (*e >= '0' && *e <= '9')
                e++;
            if (e[0] == '=' && e[1] == '=') {
                o += sprintf(o, "==PID==");
                c = e + 2;
                continue;
            }
        }
        *o++ = *c++;
    }
    *o = '\0';
    free(text);
    return out;
}

/* Runs fn in a child with the engine's variables set; returns its exit status (the engine's
 * error count, capped) and leaves its log in dir/NAME.log and its JSON in dir/NAME.json. */
static int run_scenario(const char *name, void (*fn)(void), const char *extra_env)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        harness_failures = 0; /* the child's own checks only */
        char path[256];
        snprintf(path, sizeof path, "%s/%s.err", dir, name);
        if (!freopen(path, "w", stderr))
            _exit(201);
        snprintf(path, sizeof path, "%s/%s.log", dir, name);
        setenv("GPUMEM_CHECK_LOG", path, 1);
        snprintf(path, sizeof path, "%s/%s.json", dir, name);
        setenv("GPUMEM_CHECK_JSON", path, 1);
        setenv("GPUMEM_CHECK_STATUS", dir, 1);
        setenv("GPUMEM_CHECK_STACKS", "0", 1);
        /* No rank from the environment the tests run in (a Slurm job's SLURM_PROCID, say):
         * only a scenario that sets one has one. */
        const char *ranks[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
        for (size_t i = 0; i < sizeof ranks / sizeof *ranks; i++)
            unsetenv(ranks[i]);
        if (extra_env) {
            char *copy = strdup(extra_env), *save = NULL;
            for (char *kv = strtok_r(copy, ";", &save); kv; kv = strtok_r(NULL, ";", &save))
                putenv(strdup(kv));
            free(copy);
        }
        /* As in a checked program, whose main has returned: the stack below main's frame is
         * dead (the tests' frames, stale values of earlier tests included), and above it lies
         * the start code's, so that the leak scan reads nothing of this stack. */
        check_main_entered(main_frame);
        check_main_returned(main_frame);
        fn();
        check_finish("exited", 0);
        if (harness_failures) /* a check inside the scenario failed: the parent sees 200 */
            _exit(200);
        _exit((int)(check_error_count() > 100 ? 100 : check_error_count()));
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *log_of(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s.log", dir, name);
    return normalize(read_file(path));
}

#ifdef GPUMEM_HAVE_JANSSON
/* The scenario's JSON report, parsed (NULL if it is missing or not JSON). */
static json_t *json_of(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    json_error_t err;
    return json_load_file(path, 0, &err);
}
#endif

/* What the scenario's process wrote to stderr. */
static char *stderr_of(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s.err", dir, name);
    return normalize(read_file(path));
}

static void expect_golden(const char *name)
{
    char *got = log_of(name);
    char path[512];
    snprintf(path, sizeof path, "%s/check_%s.txt", GOLDEN_DIR, name);
    char *want = read_file(path);
    if (getenv("UPDATE_GOLDEN") && got) {
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(got, f);
            fclose(f);
        }
    }
    EXPECT_STR_EQ(got, want ? want : "(golden file missing)");
    free(got);
    free(want);
}

/* ---- scenarios ---- */

static void every_finding(void)
{
    /* A leak of each of three kinds, two allocations from one call. */
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 4096, 0, 0, 0);
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV + 0x10000, 4096, 0, 0, 0);
    check_alloc("cudaMallocHost", GPUMEM_KIND_PINNED, PIN, 8192, 0, 0, 0);
    check_alloc("cudaMallocManaged", GPUMEM_KIND_MANAGED, MAN, 1 << 20, 0, 0, 0);
    /* cudaFree on pinned memory: reported, CUDA refuses, the memory stays. */
    EXPECT_EQ(check_release_begin("cudaFree", (1u << GPUMEM_KIND_DEVICE), PIN, 0), CHECK_REPORTED);
    /* A right release, then the same again. */
    EXPECT_EQ(check_release_begin("cudaFree", (1u << GPUMEM_KIND_MANAGED), MAN, 0), CHECK_GO);
    check_release_end(MAN, 1);
    EXPECT_EQ(check_release_begin("cudaFree", (1u << GPUMEM_KIND_MANAGED), MAN, 0), CHECK_REPORTED);
    /* Never allocated (CUDA refuses it too); inside an allocation; NULL. */
    EXPECT_EQ(check_release_begin("cudaFree", ~0u, 0x1234500, 0), CHECK_UNKNOWN);
    check_release_unknown_end("cudaFree", 0x1234500, 0, 0);
    /* Unknown to gpumem check but accepted by CUDA (a graph's memory node): no finding. */
    EXPECT_EQ(check_release_begin("cudaFree", ~0u, 0x2345600, 0), CHECK_UNKNOWN);
    check_release_unknown_end("cudaFree", 0x2345600, 0, 1);
    EXPECT_EQ(check_release_begin("cudaFree", ~0u, DEV + 256, 0), CHECK_REPORTED);
    EXPECT_EQ(check_release_begin("cudaFree", ~0u, 0, 0), CHECK_IGNORED);
    /* Out of memory (cudaErrorMemoryAllocation is 2). */
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, 0, (size_t)1 << 50, 0, 2, 0);
}

static void test_every_finding_golden(void)
{
    /* 5 findings + 2 leaks: the two device allocations of one call site (and stack) are one
     * leak, the pinned allocation the other; the managed one was released. */
    EXPECT_EQ(run_scenario("every", every_finding, NULL), 7);
    expect_golden("every");
}

static void clean_run(void)
{
    check_alloc("cudaMallocAsync", GPUMEM_KIND_DEVICE_ASYNC, DEV, 1000, 0, 0, 0);
    check_alloc("cudaHostRegister", GPUMEM_KIND_REGISTERED, PIN, 4096, 0, 0, 0);
    EXPECT_EQ(check_release_begin("cudaFreeAsync", 1u << GPUMEM_KIND_DEVICE_ASYNC, DEV, 0), CHECK_GO);
    check_release_end(DEV, 1);
    EXPECT_EQ(check_release_begin("cudaHostUnregister", 1u << GPUMEM_KIND_REGISTERED, PIN, 0),
              CHECK_GO);
    check_release_end(PIN, 1);
}

static void test_clean_run(void)
{
    EXPECT_EQ(run_scenario("clean", clean_run, NULL), 0);
    expect_golden("clean");
}

/* A release CUDA refused leaves the memory live: a leak at exit, not a double free later. */
static void refused_release(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 512, 0, 0, 0);
    EXPECT_EQ(check_release_begin("cudaFree", 1u << GPUMEM_KIND_DEVICE, DEV, 0), CHECK_GO);
    check_release_end(DEV, 0);
    EXPECT_EQ(check_release_begin("cudaFree", 1u << GPUMEM_KIND_DEVICE, DEV, 0), CHECK_GO);
    check_release_end(DEV, 0);
}

static void test_refused_release(void)
{
    EXPECT_EQ(run_scenario("refused", refused_release, NULL), 1);
    char *log = log_of("refused");
    EXPECT_CONTAINS(log, "512 bytes in 1 device allocation by cudaMalloc() is definitely lost");
    EXPECT_EQ(strstr(log, "Double release") == NULL, 1);
    free(log);
}

/* free() of pinned memory: reported, and the caller is told to release it with CUDA. */
static void host_free(void)
{
    check_alloc("cudaMallocHost", GPUMEM_KIND_PINNED, PIN, 8192, 0, 0, 0);
    check_alloc("cudaMallocManaged", GPUMEM_KIND_MANAGED, MAN, 4096, 0, 0, 0);
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 4096, 0, 0, 0);
    EXPECT_EQ(check_host_free("free", 0x1000, 0), 0);        /* below every CUDA range */
    EXPECT_EQ(check_host_free("free", DEV, 0), 0);           /* device memory: not host's */
    EXPECT_EQ(check_host_free("free", PIN + 16, 0), -1);     /* interior: reported, kept */
    EXPECT_EQ(check_host_free("free", PIN, 0), GPUMEM_KIND_PINNED);
    EXPECT_EQ(check_host_free("operator delete[]", MAN, 0), GPUMEM_KIND_MANAGED);
    EXPECT_EQ(check_host_free("free", PIN, 0), 0); /* gone: no longer CUDA memory */
    EXPECT_EQ(check_release_begin("cudaFree", 1u << GPUMEM_KIND_DEVICE, DEV, 0), CHECK_GO);
    check_release_end(DEV, 1);
}

static void test_host_free(void)
{
    EXPECT_EQ(run_scenario("host_free", host_free, NULL), 3);
    expect_golden("host_free");
}

/* A process ended by a signal after allocating less than the statistics flush at once: its
 * peak is still what it held (it read "no CUDA memory allocated" with 512 KiB live). */
static void abort_peak(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 512 << 10, 0, 0, 0);
    check_alloc("cudaMallocHost", GPUMEM_KIND_PINNED, PIN, 64 << 10, 0, 0, 0);
    EXPECT_EQ(check_release_begin("cudaFreeHost", 1u << GPUMEM_KIND_PINNED, PIN, 0), CHECK_GO);
    check_release_end(PIN, 1);
    check_finish("signaled", SIGABRT);
}

static void test_abort_peak(void)
{
    EXPECT_EQ(run_scenario("abort_peak", abort_peak, NULL), 1);
    char *log = log_of("abort_peak");
    EXPECT_CONTAINS(log, "signal 6 (SIGABRT)");
    EXPECT_CONTAINS(log, "PEAK: device 512.0 KiB, pinned 64.0 KiB");
    free(log);
}

/* _exit(): the report is the signal-safe one, with the exit status; exec: the report says the
 * program was replaced, and a later program of the process writes files of its own. */
static void underscore_exit(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 512 << 10, 0, 0, 0);
    check_finish("_exit", 3);
}

static void exec_replaced(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 4096, 0, 0, 0);
    check_finish("exec", 0);
    EXPECT_STR_EQ(check_exec_env(), "GPUMEM_CHECK_IMAGE=1");
}

static void second_program(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 8192, 0, 0, 0);
    EXPECT_STR_EQ(check_exec_env(), "GPUMEM_CHECK_IMAGE=3");
}

static void test_ends_without_exit(void)
{
    EXPECT_EQ(run_scenario("uexit", underscore_exit, NULL), 1);
    char *log = log_of("uexit");
    EXPECT_CONTAINS(log, "Process ending by _exit(3), which runs no exit handlers");
    EXPECT_CONTAINS(log, "524,288 bytes in 1 device allocation by cudaMalloc() still live at exit");
    EXPECT_CONTAINS(log, "PEAK: device 512.0 KiB");
    free(log);
    EXPECT_EQ(run_scenario("exec", exec_replaced, NULL), 1);
    log = log_of("exec");
    EXPECT_CONTAINS(log, "Process replacing its program (exec)");
    EXPECT_CONTAINS(log, "4,096 bytes in 1 device allocation by cudaMalloc() is definitely lost");
    free(log);
    /* The third program of a process: its own files, .exec2. */
    EXPECT_EQ(run_scenario("image", second_program, "GPUMEM_CHECK_IMAGE=2"), 1);
    char path[256];
    snprintf(path, sizeof path, "%s/image.log.exec2", dir);
    log = normalize(read_file(path));
    EXPECT_CONTAINS(log, "8,192 bytes in 1 device allocation by cudaMalloc()");
    free(log);
    snprintf(path, sizeof path, "%s/image.log", dir);
    EXPECT_EQ(access(path, F_OK) != 0, 1);
#ifdef GPUMEM_HAVE_JANSSON
    json_t *j = json_of("uexit");
    EXPECT_STR_EQ(json_string_value(json_object_get(j, "status")), "exited");
    EXPECT_EQ(json_integer_value(json_object_get(j, "exit_code")), 3);
    EXPECT_STR_EQ(json_string_value(json_object_get(j, "ended_by")), "_exit");
    json_decref(j);
    j = json_of("exec");
    EXPECT_STR_EQ(json_string_value(json_object_get(j, "ended_by")), "exec");
    json_decref(j);
#endif
}

/* The report's files: a FIFO no process reads is not waited on; a name too long once %r is
 * expanded is not cut; a relative name set by hand is taken from the folder the process was
 * in when the engine started, not from where the program went since. */
static void one_leak_then_chdir(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 4096, 0, 0, 0);
    if (chdir("/") != 0)
        perror("chdir");
}

static void start_in_dir(void)
{
    if (chdir(dir) != 0)
        perror("chdir");
    check_setup();
    one_leak_then_chdir();
}

static void test_report_files(void)
{
    char fifo[300], env[4500];
    snprintf(fifo, sizeof fifo, "%s/nobody-reads", dir);
    EXPECT_EQ(mkfifo(fifo, 0600), 0);
    snprintf(env, sizeof env, "GPUMEM_CHECK_LOG=%s;GPUMEM_CHECK_JSON=%s", fifo, fifo);
    EXPECT_EQ(run_scenario("fifo", one_leak_then_chdir, env), 1); /* would hang before */
    char *err = stderr_of("fifo");
    EXPECT_CONTAINS(err, "cannot write the log to");
    EXPECT_CONTAINS(err, "nobody-reads (it is a FIFO no process reads); writing it here");
    EXPECT_CONTAINS(err, "ERROR SUMMARY: 1 error (1 leak)");
    EXPECT_CONTAINS(err, "cannot write the JSON report to");
    free(err);
    /* 4,080 bytes of name and a 19-digit rank: no file of a cut name, said so. */
    int o = snprintf(env, sizeof env, "RANK=1234567890123456789;GPUMEM_CHECK_LOG=%s/", dir);
    memset(env + o, 'a', 4080 - (size_t)o);
    snprintf(env + 4080, sizeof env - 4080, ".%%r.log");
    EXPECT_EQ(run_scenario("longname", one_leak_then_chdir, env), 1);
    err = stderr_of("longname");
    EXPECT_CONTAINS(err, "(the name is too long once %p and %r are expanded); writing it here");
    EXPECT_CONTAINS(err, "ERROR SUMMARY of rank 1234567890123456789");
    free(err);
    /* Relative, set by hand: where the process was when the engine started. */
    EXPECT_EQ(run_scenario("relative", start_in_dir, "GPUMEM_CHECK_LOG=relative.log"), 1);
    char path[300];
    snprintf(path, sizeof path, "%s/relative.log", dir);
    char *log = read_file(path);
    EXPECT_CONTAINS(log, "ERROR SUMMARY: 1 error (1 leak)");
    free(log);
}

/* Failed calls: grouped by call, status and stack; the documented probes are no finding. */
static void failed_calls(void)
{
    for (int i = 0; i < 3; i++)
        check_call_failed("cudaGraphLaunch", 1, "cudaErrorInvalidValue", "invalid argument", 0);
    check_call_failed("cuMemAlloc_v2", 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory", 0);
    check_call_failed("cudaStreamQuery", 600, "cudaErrorNotReady", "device not ready", 0);
    check_call_failed("cuEventQuery", 600, "CUDA_ERROR_NOT_READY", "device not ready", 0);
    check_call_failed("cudaGetLastError", 1, "cudaErrorInvalidValue", "invalid argument", 0);
    check_call_failed("cuGetProcAddress_v2", 500, "CUDA_ERROR_NOT_FOUND", "named symbol not found", 0);
    check_call_failed("cudaFuncGetAttributes", 209, "cudaErrorNoKernelImageForDevice", "no kernel", 0);
    check_call_failed("cudaDeviceEnablePeerAccess", 704, "cudaErrorPeerAccessAlreadyEnabled", "", 0);
    EXPECT_EQ(check_call_probe("cudaMemcpyAsync", 600), 1);
    EXPECT_EQ(check_call_probe("cudaMemcpyAsync", 1), 0);
    EXPECT_EQ(check_call_probe("cudaGetDriverEntryPointByVersion", 500), 1);
    /* NCCL asks of each of its kernels whether it has code for this GPU (seen on an H200). */
    EXPECT_EQ(check_call_probe("cuLibraryGetKernel", 209), 1);
    EXPECT_EQ(check_call_probe("cuLibraryGetKernel", 1), 0);
    EXPECT_EQ(check_call_probe("cuLaunchKernel", 209), 0);
}

static void test_failed_calls(void)
{
    EXPECT_EQ(run_scenario("calls", failed_calls, NULL), 2);
    char *log = log_of("calls");
    EXPECT_CONTAINS(log, "Failed call: cudaGraphLaunch() returned cudaErrorInvalidValue (invalid "
                         "argument)");
    EXPECT_CONTAINS(log, "Failed call: cuMemAlloc() returned CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
    EXPECT_CONTAINS(log, "FAILED CALLS: 4 failed CUDA calls at 2 call sites (each site shown once");
    EXPECT_CONTAINS(log, "ERROR SUMMARY: 2 errors (0 leaks)");
    EXPECT_EQ(strstr(log, "Query") == NULL && strstr(log, "GetLastError") == NULL &&
                  strstr(log, "ProcAddress") == NULL && strstr(log, "FuncGetAttributes") == NULL &&
                  strstr(log, "PeerAccess") == NULL,
              1);
    free(log);
#ifdef GPUMEM_HAVE_JANSSON
    json_t *j = json_of("calls");
    json_t *f0 = json_array_get(json_object_get(j, "findings"), 0);
    EXPECT_STR_EQ(json_string_value(json_object_get(f0, "kind")), "failed-call");
    EXPECT_STR_EQ(json_string_value(json_object_get(f0, "call")), "cudaGraphLaunch");
    EXPECT_STR_EQ(json_string_value(json_object_get(f0, "error")), "cudaErrorInvalidValue");
    EXPECT_EQ(json_integer_value(json_object_get(f0, "count")), 3);
    EXPECT_EQ(json_integer_value(json_object_get(f0, "status")), 1);
    /* The probes passed over are on record (not ready, every query's answer, is not). */
    json_t *probes = json_object_get(j, "probes");
    EXPECT_EQ(json_array_size(probes), 4);
    json_t *p0 = json_array_get(probes, 0);
    EXPECT_STR_EQ(json_string_value(json_object_get(p0, "call")), "cudaGetLastError");
    EXPECT_EQ(json_integer_value(json_object_get(p0, "count")), 1);
    json_decref(j);
#endif
    /* Notes: shown, not counted; no: not even shown. */
    EXPECT_EQ(run_scenario("calls_note", failed_calls, "GPUMEM_CHECK_FAILED_CALLS=note"), 0);
    log = log_of("calls_note");
    EXPECT_CONTAINS(log, "Failed call: cudaGraphLaunch() returned cudaErrorInvalidValue (invalid "
                         "argument); a note, not counted (--failed-calls=note)");
    free(log);
    EXPECT_EQ(run_scenario("calls_no", failed_calls, "GPUMEM_CHECK_FAILED_CALLS=no"), 0);
    log = log_of("calls_no");
    EXPECT_EQ(strstr(log, "Failed call") == NULL, 1);
    free(log);
    /* A suppression names them as any other finding. */
    char supp[300], env[400];
    snprintf(supp, sizeof supp, "%s/calls.supp", dir);
    FILE *f = fopen(supp, "w");
    fputs("{\n   graph launches\n   gpumem:failed-call\n   call:cudaGraph*\n}\n", f);
    fclose(f);
    snprintf(env, sizeof env, "GPUMEM_CHECK_SUPPRESSIONS=%s", supp);
    EXPECT_EQ(run_scenario("calls_supp", failed_calls, env), 1);
    log = log_of("calls_supp");
    EXPECT_EQ(strstr(log, "cudaGraphLaunch") == NULL, 1);
    EXPECT_CONTAINS(log, "ERROR SUMMARY: 1 error (0 leaks), 1 suppressed");
    free(log);
}

/* Failed calls on several threads at once, each call a name of its own seen first there:
 * every failure counted, each name reported once (under ThreadSanitizer: no data race). */
static const char *const thread_calls[] = {"cudaMemcpy2DAsync_ptsz", "cuMemcpyHtoD_v2",
                                           "cudaGraphInstantiate", "cuStreamSynchronize"};

static void *fail_calls(void *arg)
{
    const char *call = thread_calls[(uintptr_t)arg];
    for (int i = 0; i < 200; i++) {
        check_call_failed(call, 1, "cudaErrorInvalidValue", "invalid argument", 0);
        check_call_failed("cudaGetLastError", 1, "cudaErrorInvalidValue", "invalid argument", 0);
    }
    return NULL;
}

static void failed_calls_threads(void)
{
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        EXPECT_EQ(pthread_create(&t[i], NULL, fail_calls, (void *)i), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
}

static void test_failed_calls_threads(void)
{
    EXPECT_EQ(run_scenario("calls_threads", failed_calls_threads, NULL), 4);
    char *log = log_of("calls_threads");
    EXPECT_CONTAINS(log, "FAILED CALLS: 800 failed CUDA calls at 4 call sites");
    EXPECT_CONTAINS(log, "Failed call: cudaMemcpy2DAsync() returned cudaErrorInvalidValue");
    EXPECT_CONTAINS(log, "Failed call: cuMemcpyHtoD() returned cudaErrorInvalidValue");
    EXPECT_EQ(strstr(log, "GetLastError") == NULL, 1);
    free(log);
}

/* Calls counted (GPUMEM_CHECK_COUNT_CALLS=1): the most frequent listed at the end. */
static void seen_calls(void)
{
    for (int i = 0; i < 30; i++)
        check_call_seen(1, 279, "cuMemcpyHtoDAsync_v2");
    for (int i = 0; i < 10; i++)
        check_call_seen(0, 14, "cudaEventQuery");
    check_call_seen(0, 14000, "beyond the table: not counted");
    /* Fourteen more, once to fourteen times each, rarest first: the list keeps the twelve most
     * frequent (down to call104's five), and the four rarest are counted in the total only. */
    static char names[14][16];
    for (int k = 0; k < 14; k++) {
        snprintf(names[k], sizeof names[k], "call%d", 100 + k);
        for (int i = 0; i <= k; i++)
            check_call_seen(1, 100 + (unsigned)k, names[k]);
    }
}

static void test_calls_seen(void)
{
    EXPECT_EQ(run_scenario("seen", seen_calls, "GPUMEM_CHECK_COUNT_CALLS=1"), 0);
    char *log = log_of("seen");
    EXPECT_CONTAINS(log, "CALLS SEEN: 145 CUDA calls came through gpumem check's callbacks; "
                         "the most frequent:");
    EXPECT_CONTAINS(log, "cuMemcpyHtoDAsync_v2                               30   20.7 %");
    EXPECT_CONTAINS(log, "call113                                            14    9.7 %");
    EXPECT_CONTAINS(log, "cudaEventQuery                                     10    6.9 %");
    EXPECT_CONTAINS(log, "call104                                             5    3.4 %");
    EXPECT_EQ(strstr(log, "call103") == NULL && strstr(log, "call100") == NULL, 1);
    /* most frequent first */
    char *a = strstr(log, "cuMemcpyHtoDAsync_v2"), *b = strstr(log, "call113"),
         *c = strstr(log, "cudaEventQuery"), *d = strstr(log, "call104");
    EXPECT_EQ(a && b && c && d && a < b && b < c && c < d, 1);
    EXPECT_EQ(strstr(log, "beyond") == NULL, 1);
    free(log);
    EXPECT_EQ(run_scenario("unseen", seen_calls, NULL), 0);
    log = log_of("unseen");
    EXPECT_EQ(strstr(log, "CALLS SEEN") == NULL, 1);
    free(log);
}

#define BIT(k) (1u << GPUMEM_KIND_##k)
/* Handles, as a driver's would look: a small number such as 0x42 may sit in any data, and a
 * handle that some word holds is still reachable. */
#define H(n) (0x5a5a00000000ull + (n) * 0x1000ull)
static const unsigned cudafree_mask = BIT(DEVICE) | BIT(DEVICE_ASYNC) | BIT(MANAGED) | BIT(GRAPH);

/* cudaDeviceReset takes the device's memory with it: what is live then is reported as leaked
 * at the reset, with the reset's call; registered host memory and other devices' memory stay. */
static void device_reset(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 4096, 0, 0, 0);
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV + 4096, 4096, 1, 0, 0);
    check_alloc("cudaMallocHost", GPUMEM_KIND_PINNED, PIN, 4096, 0, 0, 0);
    check_alloc("cudaHostRegister", GPUMEM_KIND_REGISTERED, MAN, 4096, 0, 0, 0);
    for (int i = 0; i < 600; i++) /* more than one batch of the reset's walk */
        check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV + 0x100000 + (uintptr_t)i * 512, 256,
                    0, 0, 0);
    check_vmm_handle("cuMemCreate", H(0x42), 2 << 20, 0, 0);
    check_vmm_map(DEV + 0x10000000, 2 << 20, H(0x42), 0);
    check_device_reset("cudaDeviceReset", 0, 0);
    /* Gone with the context: releasing one now is a release of released memory. */
    EXPECT_EQ(check_release_begin("cudaFree", 1u << GPUMEM_KIND_DEVICE, DEV, 0), CHECK_REPORTED);
    EXPECT_EQ(check_vmm_release_begin("cuMemRelease", H(0x42), 0), CHECK_REPORTED);
}

static void test_device_reset(void)
{
    /* At the reset: device 0's cudaMalloc (601 allocations, one call site), its pinned block
     * and its cuMemCreate handle; at exit: device 1's block and the registered memory; and the
     * two releases after the reset. */
    EXPECT_EQ(run_scenario("reset", device_reset, NULL), 7);
    char *log = log_of("reset");
    EXPECT_CONTAINS(log, "157,696 bytes in 601 device allocations on device 0 by cudaMalloc() are "
                         "definitely lost");
    EXPECT_CONTAINS(log, "They were still allocated when cudaDeviceReset() destroyed the device's "
                         "context, which released them:");
    EXPECT_CONTAINS(log, "4,096 bytes in 1 pinned allocation on device 0 by cudaMallocHost() is "
                         "definitely lost");
    EXPECT_CONTAINS(log, "2,097,152 bytes in 1 virtual allocation on device 0 by cuMemCreate()");
    EXPECT_CONTAINS(log, "4,096 bytes in 1 device allocation on device 1 by cudaMalloc()");
    EXPECT_CONTAINS(log, "4,096 bytes in 1 registered allocation on device 0 by cudaHostRegister()");
    /* The summary counts the leaks of both moments. */
    EXPECT_CONTAINS(log, "LEAK SUMMARY: definitely lost: 2,267,136 bytes in 605 allocations from 5 "
                         "call sites");
    EXPECT_CONTAINS(log, "ERROR SUMMARY: 7 errors (5 leaks)");
    EXPECT_CONTAINS(log, "Double release: cudaFree() of 4,096 bytes of device memory at "
                         "0x7f0000000000, already released by cudaDeviceReset");
#ifdef GPUMEM_HAVE_JANSSON
    json_t *j = json_of("reset");
    json_t *f0 = json_array_get(json_object_get(j, "findings"), 0);
    EXPECT_STR_EQ(json_string_value(json_object_get(f0, "kind")), "leak");
    EXPECT_STR_EQ(json_string_value(json_object_get(f0, "reset_call")), "cudaDeviceReset");
    EXPECT_EQ(json_is_array(json_object_get(f0, "reset_stack")), 1);
    json_decref(j);
#endif
    EXPECT_CONTAINS(log, "Double release: cuMemRelease() of 2,097,152 bytes of virtual memory at "
                         "0x5a5a00042000, already released by cudaDeviceReset");
    free(log);
}

/* Virtual memory as CUDA defines it: references and mappings hold a handle's memory. */
#define VA 0x7b0000000000ull
#define MB2 ((size_t)2 << 20)
static void vmm_release(unsigned long long h, int want)
{
    EXPECT_EQ(check_vmm_release_begin("cuMemRelease", h, 0), want);
    if (want == CHECK_GO)
        check_vmm_release_end("cuMemRelease", h, 1, 0);
    else if (want == CHECK_UNKNOWN)
        check_release_unknown_end("cuMemRelease", check_handle_key(h), 0, 0);
}
static void vmm_unmap(uintptr_t base, size_t bytes)
{
    EXPECT_EQ(check_vmm_unmap_begin(base, bytes), CHECK_GO);
    check_vmm_unmap_end("cuMemUnmap", base, bytes, 0);
}

static void vmm_model(void)
{
    /* NCCL's allocation and free: create, reserve, map; retain, release, unmap, release. */
    check_vmm_handle("cuMemCreate", H(0x11), MB2, 0, 0);
    check_alloc("cuMemAddressReserve", GPUMEM_KIND_RESERVED, check_reserve_key(VA), MB2, 0, 0, 0);
    check_vmm_map(VA, MB2, H(0x11), 0);
    check_vmm_retain(H(0x11));
    vmm_release(H(0x11), CHECK_GO);
    vmm_unmap(VA, MB2);
    vmm_release(H(0x11), CHECK_GO);
    EXPECT_EQ(check_release_begin("cuMemAddressFree", 1u << GPUMEM_KIND_RESERVED,
                                  check_reserve_key(VA), 0), CHECK_GO);
    check_release_end(check_reserve_key(VA), 1);
    /* Released right after mapping (the mapping keeps the memory): a second release is one too
     * many; the unmap then frees it. */
    check_vmm_handle("cuMemCreate", H(0x12), MB2, 0, 0);
    check_vmm_map(VA + MB2, MB2, H(0x12), 0);
    vmm_release(H(0x12), CHECK_GO);
    vmm_release(H(0x12), CHECK_REPORTED);
    vmm_unmap(VA + MB2, MB2);
    /* Never released, mapped: a leak. Released, never unmapped: a leak too (the mapping holds
     * it). Created and retained, released once: a leak. */
    check_vmm_handle("cuMemCreate", H(0x13), MB2, 0, 0);
    check_vmm_map(VA + 2 * MB2, MB2, H(0x13), 0);
    check_vmm_handle("cuMemCreate", H(0x14), 2 * MB2, 0, 0);
    check_vmm_map(VA + 3 * MB2, 2 * MB2, H(0x14), 0);
    vmm_release(H(0x14), CHECK_GO);
    EXPECT_EQ(check_vmm_release_held(H(0x14)), 1);
    check_vmm_handle("cuMemCreate", H(0x15), 3 * MB2, 0, 0);
    check_vmm_retain(H(0x15));
    vmm_release(H(0x15), CHECK_GO);
    /* Released when nothing held it any more: the next release is a double release. */
    check_vmm_handle("cuMemCreate", H(0x16), MB2, 0, 0);
    vmm_release(H(0x16), CHECK_GO);
    vmm_release(H(0x16), CHECK_REPORTED);
    /* cudaFree of a mapping: a mismatch CUDA refuses. */
    EXPECT_EQ(check_release_begin("cudaFree", cudafree_mask, VA + 2 * MB2, 0), CHECK_REPORTED);
    /* One cuMemUnmap over two mappings of one handle; a third mapping outside stays. */
    check_vmm_handle("cuMemCreate", H(0x17), MB2, 0, 0);
    check_vmm_handle("cuMemCreate", H(0x18), MB2, 0, 0);
    check_vmm_map(VA + 8 * MB2, MB2, H(0x17), 0);
    check_vmm_map(VA + 9 * MB2, MB2, H(0x17), 0);
    check_vmm_map(VA + 10 * MB2, MB2, H(0x18), 0);
    vmm_release(H(0x17), CHECK_GO);
    vmm_release(H(0x18), CHECK_GO);
    vmm_unmap(VA + 8 * MB2, 2 * MB2);
    EXPECT_EQ(check_vmm_release_held(H(0x18)), 1);
    vmm_unmap(VA + 10 * MB2, MB2);
    /* An import: its size comes with its first mapping; never released, a leak. */
    check_vmm_handle("cuMemImportFromShareableHandle", H(0x19), 0, 0, 0);
    check_vmm_map(VA + 12 * MB2, 4 * MB2, H(0x19), 0);
    /* A multicast object holds the memory bound to it until it goes. */
    check_vmm_handle("cuMemCreate", H(0x1a), MB2, 0, 0);
    check_vmm_handle("cuMulticastCreate", H(0x1b), MB2, 0, 0);
    check_vmm_bind(H(0x1b), 0, MB2, H(0x1a));
    vmm_release(H(0x1a), CHECK_GO);
    EXPECT_EQ(check_vmm_release_held(H(0x1a)), 1);
    vmm_release(H(0x1b), CHECK_GO);
    EXPECT_EQ(check_vmm_release_held(H(0x1a)), 0);
    /* A handle never seen, which CUDA refuses too. */
    vmm_release(0xdead, CHECK_UNKNOWN);
}

static void test_vmm_model(void)
{
    /* 2 double releases, 1 mismatch, 1 invalid release; 4 leaks (0x13, 0x14 and 0x15 from one
     * call site, as there are no stacks here; 0x19). */
    EXPECT_EQ(run_scenario("vmm", vmm_model, NULL), 6);
    char *log = log_of("vmm");
    EXPECT_CONTAINS(log, "Double release: cuMemRelease() of 2,097,152 bytes of virtual memory at "
                         "0x5a5a00012000,");
    EXPECT_CONTAINS(log, "Double release: cuMemRelease() of 2,097,152 bytes of virtual memory at "
                         "0x5a5a00016000,");
    EXPECT_CONTAINS(log, "Mismatched release: cudaFree() of 2,097,152 bytes of virtual memory "
                         "allocated by cuMemMap");
    EXPECT_CONTAINS(log, "virtual memory is released with cuMemUnmap()");
    EXPECT_CONTAINS(log, "Invalid release: cuMemRelease() of 0xdead");
    EXPECT_CONTAINS(log, "8,388,608 bytes in 1 virtual allocation by cuMemImportFromShareableHandle() "
                         "is definitely lost");
    EXPECT_CONTAINS(log, "12,582,912 bytes in 3 virtual allocations by cuMemCreate() are "
                         "definitely lost");
    EXPECT_CONTAINS(log, "LEAK SUMMARY: definitely lost: 20,971,520 bytes in 4 allocations from 2 "
                         "call sites");
    /* Physical memory counted once, not once more per mapping: at most 0x13, 0x14, 0x15, 0x17,
     * 0x18 and 0x19 (2 + 4 + 6 + 2 + 2 + 8 MiB) lived at one time. */
    EXPECT_CONTAINS(log, "PEAK: virtual 24.0 MiB, reserved 2.0 MiB");
    free(log);
}

/* Two devices in one process, as NCCL's peer-to-peer transport runs them (-g 2, cuMem on):
 * device 0's buffer is retained once for its peer (ncclP2pAllocateShareableBuffer's refcount),
 * mapped by device 1 in a range of its own and released there at once (p2pMap); at the end the
 * peer unmaps its range (ncclCuMemFreeAddr) and the owner frees its buffer the ncclCuMemFree way
 * (retain, release, unmap, release). In either order: nothing to report. cuMemSetAccess, which
 * gives device 1 access to the mapping, is no event: access is not memory. */
static void nccl_peer_buffer(unsigned long long h, uintptr_t owner_va, uintptr_t peer_va,
                             int peer_first)
{
    check_vmm_handle("cuMemCreate", h, MB2, 0, 0);
    check_alloc("cuMemAddressReserve", GPUMEM_KIND_RESERVED, check_reserve_key(owner_va), MB2, 0,
                0, 0);
    check_vmm_map(owner_va, MB2, h, 0);
    check_vmm_retain(h); /* one reference for the one peer that maps it */
    check_alloc("cuMemAddressReserve", GPUMEM_KIND_RESERVED, check_reserve_key(peer_va), MB2, 1,
                0, 0);
    check_vmm_map(peer_va, MB2, h, 0);
    vmm_release(h, CHECK_GO);
    for (int step = 0; step < 2; step++) {
        if ((step == 0) == (peer_first != 0)) {
            vmm_unmap(peer_va, MB2);
        } else {
            check_vmm_retain(h);
            vmm_release(h, CHECK_GO);
            vmm_unmap(owner_va, MB2);
            vmm_release(h, CHECK_GO);
            /* The owner's references are gone; the peer's mapping, when still there, holds it. */
            EXPECT_EQ(check_vmm_release_held(h), step == 0);
        }
    }
    uintptr_t va[2] = {owner_va, peer_va};
    for (int i = 0; i < 2; i++) {
        EXPECT_EQ(check_release_begin("cuMemAddressFree", BIT(RESERVED), check_reserve_key(va[i]),
                                      0), CHECK_GO);
        check_release_end(check_reserve_key(va[i]), 1);
    }
}

static void vmm_two_devices(void)
{
    nccl_peer_buffer(H(0x21), VA, VA + 0x100000000ull, 1);
    nccl_peer_buffer(H(0x22), VA + MB2, VA + 0x100000000ull + MB2, 0);
    /* A reset of device 1 takes device 1's handle (a leak at the reset) and its mapping, and
     * leaves device 0's handle and both its mappings, device 1's range included. */
    const uintptr_t va0 = VA + 4 * MB2, va1 = VA + 0x100000000ull + 4 * MB2;
    check_vmm_handle("cuMemCreate", H(0x23), MB2, 0, 0);
    check_vmm_map(va0, MB2, H(0x23), 0);
    check_vmm_retain(H(0x23));
    check_vmm_map(va1, MB2, H(0x23), 0);
    vmm_release(H(0x23), CHECK_GO);
    check_vmm_handle("cuMemCreate", H(0x24), 2 * MB2, 1, 0);
    check_vmm_map(va1 + MB2, 2 * MB2, H(0x24), 0);
    check_device_reset("cudaDeviceReset", 1, 0);
    EXPECT_EQ(check_vmm_unmap_begin(va1 + MB2, 2 * MB2), CHECK_UNKNOWN);
    vmm_unmap(va1, MB2);
    check_vmm_retain(H(0x23));
    vmm_release(H(0x23), CHECK_GO);
    vmm_unmap(va0, MB2);
    vmm_release(H(0x23), CHECK_GO);
    EXPECT_EQ(check_vmm_release_held(H(0x23)), 0);
    /* The planted leak: device 0's buffer, mapped and released by its peer, never freed by its
     * owner. */
    check_vmm_handle("cuMemCreate", H(0x25), 3 * MB2, 0, 0);
    check_vmm_map(va0 + MB2, 3 * MB2, H(0x25), 0);
    check_vmm_retain(H(0x25));
    check_vmm_map(va1 + 3 * MB2, 3 * MB2, H(0x25), 0);
    vmm_release(H(0x25), CHECK_GO);
    vmm_unmap(va1 + 3 * MB2, 3 * MB2);
}

static void test_vmm_two_devices(void)
{
    /* Two leaks: device 1's handle at its reset, device 0's buffer at exit; nothing else. */
    EXPECT_EQ(run_scenario("vmm2", vmm_two_devices, NULL), 2);
    char *log = log_of("vmm2");
    EXPECT_CONTAINS(log, "4,194,304 bytes in 1 virtual allocation on device 1 by cuMemCreate() is "
                         "definitely lost");
    EXPECT_CONTAINS(log, "It was still allocated when cudaDeviceReset() destroyed the device's "
                         "context, which released it:");
    EXPECT_CONTAINS(log, "DEVICE 0: 6,291,456 bytes left in 1 allocation");
    EXPECT_CONTAINS(log, "DEVICE 1: 4,194,304 bytes left in 1 allocation");
    EXPECT_CONTAINS(log, "6,291,456 bytes in 1 virtual allocation on device 0 by cuMemCreate() is "
                         "definitely lost");
    EXPECT_EQ(strstr(log, "Double release") == NULL && strstr(log, "Invalid release") == NULL &&
                  strstr(log, "reserved allocation") == NULL,
              1);
    EXPECT_CONTAINS(log, "ERROR SUMMARY: 2 errors (2 leaks)");
    free(log);
}

/* CUDA arrays, kept under their handles: released right, leaked, and released with cudaFree
 * (a mismatch CUDA refuses) or with the other array call. */
#define ARR 0x55550000ull

static void arrays(void)
{
    check_alloc("cudaMallocArray", GPUMEM_KIND_ARRAY, check_array_key(ARR), 65536, 0, 0, 0);
    check_alloc("cudaMalloc3DArray", GPUMEM_KIND_ARRAY, check_array_key(ARR + 0x100), 4096, 0, 0, 0);
    check_alloc("cudaMallocMipmappedArray", GPUMEM_KIND_MIPMAPPED, check_array_key(ARR + 0x200),
                5456, 0, 0, 0);
    check_alloc("cuArrayCreate", GPUMEM_KIND_ARRAY, check_array_key(ARR + 0x300), 1024, 0, 0, 0);
    /* Right: cudaFreeArray of the first, cuArrayDestroy of the driver's. */
    EXPECT_EQ(check_release_begin("cudaFreeArray", BIT(ARRAY), check_array_key(ARR), 0), CHECK_GO);
    check_release_end(check_array_key(ARR), 1);
    EXPECT_EQ(check_release_begin("cuArrayDestroy", BIT(ARRAY), check_array_key(ARR + 0x300), 0),
              CHECK_GO);
    check_release_end(check_array_key(ARR + 0x300), 1);
    /* cudaFree of an array's handle; cudaFreeArray of a mipmapped array; twice the first. */
    EXPECT_EQ(check_release_begin("cudaFree", cudafree_mask, ARR + 0x100, 0), CHECK_REPORTED);
    EXPECT_EQ(check_release_begin("cudaFreeArray", BIT(ARRAY), check_array_key(ARR + 0x200), 0),
              CHECK_REPORTED);
    EXPECT_EQ(check_release_begin("cudaFreeArray", BIT(ARRAY), check_array_key(ARR), 0),
              CHECK_REPORTED);
}

static void test_arrays(void)
{
    /* 3 findings, 2 leaks (the 3D array and the mipmapped one stay). */
    EXPECT_EQ(run_scenario("arrays", arrays, NULL), 5);
    char *log = log_of("arrays");
    EXPECT_CONTAINS(log, "Mismatched release: cudaFree() of 4,096 bytes of array memory allocated "
                         "by cudaMalloc3DArray");
    EXPECT_CONTAINS(log, "array memory is released with cudaFreeArray(); CUDA refuses this call");
    EXPECT_CONTAINS(log, "Mismatched release: cudaFreeArray() of 5,456 bytes of mipmapped-array "
                         "memory allocated by cudaMallocMipmappedArray");
    EXPECT_CONTAINS(log, "released with cudaFreeMipmappedArray()");
    EXPECT_CONTAINS(log, "Double release: cudaFreeArray() of 65,536 bytes of array memory at "
                         "0x55550000,");
    EXPECT_CONTAINS(log, "4,096 bytes in 1 array allocation by cudaMalloc3DArray() is definitely lost");
    EXPECT_CONTAINS(log, "5,456 bytes in 1 mipmapped-array allocation by "
                         "cudaMallocMipmappedArray() is definitely lost");
    EXPECT_CONTAINS(log, "PEAK: array 69.0 KiB, mipmapped-array 5.3 KiB");
    free(log);
}

/* Graph memory nodes: released by a free node or by cudaFree after the graph ran; one without
 * either is a leak. Address reservations: cuMemAddressFree, and mappings inside a reservation
 * leave the reservation alone. */
static void graphs_and_reservations(void)
{
    check_alloc("cudaGraphAddMemAllocNode", GPUMEM_KIND_GRAPH, DEV, 1 << 20, 0, 0, 0);
    check_alloc("cudaGraphAddMemAllocNode", GPUMEM_KIND_GRAPH, DEV + (1 << 20), 1 << 20, 0, 0, 0);
    check_alloc("cuGraphAddMemAllocNode", GPUMEM_KIND_GRAPH, DEV + (2 << 20), 512 << 20, 0, 0, 0);
    EXPECT_EQ(check_release_begin("cudaGraphAddMemFreeNode", BIT(GRAPH), DEV, 0), CHECK_GO);
    check_release_end(DEV, 1);
    EXPECT_EQ(check_release_begin("cudaFree", cudafree_mask, DEV + (1 << 20), 0), CHECK_GO);
    check_release_end(DEV + (1 << 20), 1);
    /* A free node for device memory is a mismatch. */
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, MAN, 4096, 0, 0, 0);
    EXPECT_EQ(check_release_begin("cudaGraphAddMemFreeNode", BIT(GRAPH), MAN, 0), CHECK_REPORTED);
    EXPECT_EQ(check_release_begin("cudaFree", cudafree_mask, MAN, 0), CHECK_GO);
    check_release_end(MAN, 1);

    const uintptr_t va = 0x7a0000000000ull;
    check_alloc("cuMemAddressReserve", GPUMEM_KIND_RESERVED, check_reserve_key(va), 64 << 20, 0, 0, 0);
    check_alloc("cuMemAddressReserve", GPUMEM_KIND_RESERVED, check_reserve_key(va + (64 << 20)),
                32 << 20, 0, 0, 0);
    check_vmm_handle("cuMemCreate", 0x77, 2 << 20, 0, 0);
    check_vmm_map(va, 2 << 20, 0x77, 0);
    EXPECT_EQ(check_vmm_unmap_begin(va, 2 << 20), CHECK_GO);
    check_vmm_unmap_end("cuMemUnmap", va, 2 << 20, 0);
    EXPECT_EQ(check_vmm_release_begin("cuMemRelease", 0x77, 0), CHECK_GO);
    check_vmm_release_end("cuMemRelease", 0x77, 1, 0);
    EXPECT_EQ(check_release_begin("cuMemAddressFree", BIT(RESERVED), check_reserve_key(va), 0),
              CHECK_GO);
    check_release_end(check_reserve_key(va), 1);
}

static void test_graphs_and_reservations(void)
{
    /* 1 mismatch, 2 leaks: the driver's graph allocation and the second reservation. */
    EXPECT_EQ(run_scenario("graphs", graphs_and_reservations, NULL), 3);
    char *log = log_of("graphs");
    EXPECT_CONTAINS(log, "Mismatched release: cudaGraphAddMemFreeNode() of 4,096 bytes of device "
                         "memory allocated by cudaMalloc");
    EXPECT_CONTAINS(log, "536,870,912 bytes in 1 graph allocation by cuGraphAddMemAllocNode() "
                         "is definitely lost");
    EXPECT_CONTAINS(log, "33,554,432 bytes in 1 reserved allocation by cuMemAddressReserve() "
                         "is definitely lost");
    EXPECT_EQ(strstr(log, "1,048,576 bytes in") == NULL, 1);
    EXPECT_EQ(strstr(log, "67,108,864 bytes in") == NULL, 1);
    free(log);
}

/* The default suppressions (tools/check/suppressions/default.supp) load, and match the caching
 * allocators' stacks but not a raw allocation from Python. */
static void test_default_suppressions(void)
{
    char err[512] = "";
    check_supp_clear();
    EXPECT_EQ(check_supp_load(DEFAULT_SUPP, err, sizeof err), 0);
    fprintf(stderr, "%s", err);
    const char *site = "/opt/venv/lib/python3.12/site-packages";
    char torch[256], cupy[256], ctypes[256], cublas[256];
    snprintf(torch, sizeof torch, "%s/torch/lib/libc10_cuda.so", site);
    snprintf(cupy, sizeof cupy, "%s/cupy/cuda/memory.cpython-312-x86_64-linux-gnu.so", site);
    snprintf(ctypes, sizeof ctypes, "/usr/lib/python3.12/lib-dynload/_ctypes.cpython-312-x86_64-linux-gnu.so");
    snprintf(cublas, sizeof cublas, "%s/nvidia/cu13/lib/libcublas.so.13", site);
    gpumem__frame py = {.func = "_PyEval_EvalFrameDefault", .object = "/usr/bin/python3.12"};
    gpumem__frame f_torch[3] = {{.func = "???", .object = torch}, {.func = "???", .object = torch}, py};
    gpumem__frame f_cupy[2] = {{.func = "???", .object = cupy}, py};
    gpumem__frame f_cublas[2] = {{.func = "???", .object = cublas}, py};
    gpumem__frame f_raw[3] = {{.func = "ffi_call", .object = "/lib/x86_64-linux-gnu/libffi.so.8"},
                              {.func = "???", .object = ctypes}, py};
    EXPECT_CONTAINS(check_supp_match(CHECK_LEAK, "cudaMalloc", f_torch, 3), "PyTorch");
    EXPECT_CONTAINS(check_supp_match(CHECK_LEAK, "cudaMalloc", f_cupy, 2), "CuPy");
    EXPECT_CONTAINS(check_supp_match(CHECK_LEAK, "cudaMalloc", f_cublas, 2), "cuBLAS");
    EXPECT_NULL(check_supp_match(CHECK_LEAK, "cudaMalloc", f_raw, 3));
    /* Leaks only: a mismatched release inside PyTorch is still reported. */
    EXPECT_NULL(check_supp_match(CHECK_MISMATCHED, "cudaFree", f_torch, 3));
    check_supp_clear();
}

/* realloc() of pinned memory (preload.c): looked up first (its size, for the copy), then
 * released as a mismatch, with realloc's own hint. Other memory is not CUDA's. */
static void host_realloc(void)
{
    check_alloc("cudaMallocHost", GPUMEM_KIND_PINNED, PIN, 8192, 0, 0, 0);
    uintptr_t base = 0;
    size_t bytes = 0;
    EXPECT_EQ(check_host_lookup(0x1000, &base, &bytes), 0);
    EXPECT_EQ(check_host_lookup(PIN + 100, &base, &bytes), GPUMEM_KIND_PINNED);
    EXPECT_EQ(base, PIN);
    EXPECT_EQ(bytes, 8192);
    EXPECT_EQ(check_host_free("realloc", PIN, 0), GPUMEM_KIND_PINNED);
    EXPECT_EQ(check_host_lookup(PIN, &base, &bytes), 0);
}

static void test_host_realloc(void)
{
    EXPECT_EQ(run_scenario("realloc", host_realloc, NULL), 1);
    char *log = log_of("realloc");
    EXPECT_CONTAINS(log, "Mismatched release: realloc() of 8,192 bytes of pinned memory "
                         "allocated by cudaMallocHost");
    EXPECT_CONTAINS(log, "pinned memory is released with cudaFreeHost(); gpumem check gave "
                         "realloc() new memory with the old contents and released the old so");
    EXPECT_CONTAINS(log, "LEAK SUMMARY: no CUDA memory left allocated at exit");
    free(log);
}

/* Leak kinds: five fake device allocations. The program points at three from where the scan
 * reads: a global, a global pointing inside one (an interior pointer) and another thread's
 * stack; at one only from a heap block, which the scan does not read (the CUDA libraries keep
 * their own copies of every address there), so it is definitely lost; the fifth is referenced
 * nowhere. Addresses no other test uses. */
#define REACH 0x6a0000000000ull
static volatile uintptr_t reach_global, reach_global_interior;
static uintptr_t *reach_heap;
static pthread_mutex_t reach_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reach_cond = PTHREAD_COND_INITIALIZER;
static int reach_state; /* 1: the thread holds its pointer; 2: it may end */

static void *reach_thread(void *arg)
{
    (void)arg;
    volatile uintptr_t on_my_stack = REACH + 0x300000;
    pthread_mutex_lock(&reach_lock);
    reach_state = 1;
    pthread_cond_broadcast(&reach_cond);
    while (reach_state != 2)
        pthread_cond_wait(&reach_cond, &reach_lock);
    pthread_mutex_unlock(&reach_lock);
    return (void *)(uintptr_t)on_my_stack;
}

static void leak_kinds(void)
{
    for (uintptr_t i = 0; i < 5; i++)
        check_alloc(i == 4 ? "cudaMallocAsync" : "cudaMalloc",
                    i == 4 ? GPUMEM_KIND_DEVICE_ASYNC : GPUMEM_KIND_DEVICE, REACH + i * 0x100000,
                    4096 * (i + 1), 0, 0, 0);
    reach_heap = malloc(64 * sizeof *reach_heap);
    if (!reach_heap)
        return;
    memset(reach_heap, 0, 64 * sizeof *reach_heap);
    reach_heap[17] = REACH;                    /* from the heap */
    reach_global = REACH + 0x100000;           /* from the data segment */
    reach_global_interior = REACH + 0x200000 + 4000; /* inside the third (12 KiB) one */
    pthread_t t;
    if (pthread_create(&t, NULL, reach_thread, NULL) != 0)
        return;
    pthread_mutex_lock(&reach_lock);
    while (reach_state != 1)
        pthread_cond_wait(&reach_cond, &reach_lock);
    pthread_mutex_unlock(&reach_lock);
    /* REACH + 0x400000 (the cudaMallocAsync one) is held by nobody. */
    check_finish("exited", 0);
    pthread_mutex_lock(&reach_lock);
    reach_state = 2;
    pthread_cond_broadcast(&reach_cond);
    pthread_mutex_unlock(&reach_lock);
    pthread_join(t, NULL);
}

static void test_leak_kinds(void)
{
    /* Default: every leak is listed and is an error, whatever its kind; still reachable memory
     * says where its pointer is. */
    EXPECT_EQ(run_scenario("kinds", leak_kinds, NULL), 3);
    char *log = log_of("kinds");
    EXPECT_CONTAINS(log, "20,480 bytes in 1 device-async allocation by cudaMallocAsync() is "
                         "definitely lost");
    EXPECT_CONTAINS(log, "4,096 bytes in 1 device allocation by cudaMalloc() is definitely lost");
    EXPECT_CONTAINS(log, "LEAK SUMMARY: definitely lost: 24,576 bytes in 2 allocations from 2 "
                         "call sites (device 4,096 in 1, device-async 20,480 in 1)");
    /* 8 + 12 + 16 KiB from one call site (no stacks here): one still reachable group. */
    EXPECT_CONTAINS(log, "36,864 bytes in 3 device allocations by cudaMalloc() are still reachable");
    EXPECT_CONTAINS(log, "The first of them is referenced from the global reach_global in ");
    EXPECT_CONTAINS(log, "LEAK SUMMARY: still reachable: 36,864 bytes in 3 allocations from 1 "
                         "call site (device 36,864 in 3)\n");
    EXPECT_CONTAINS(log, "ERROR SUMMARY: 3 errors (3 leaks)");
    free(log);
#ifdef GPUMEM_HAVE_JANSSON
    json_t *doc = json_of("kinds");
    ASSERT_NOT_NULL(doc);
    json_t *fs = json_object_get(doc, "findings");
    EXPECT_EQ(json_array_size(fs), 3);
    for (size_t i = 0; i < json_array_size(fs); i++) {
        json_t *f = json_array_get(fs, i);
        const char *lk = json_string_value(json_object_get(f, "leak_kind"));
        EXPECT_TRUE(json_object_get(f, "error") == NULL);
        if (lk && strcmp(lk, "reachable") == 0)
            EXPECT_CONTAINS(json_string_value(json_object_get(f, "reachable_from")),
                            "the global reach_global in ");
    }
    json_decref(doc);
#endif

    /* valgrind's rule: only definitely lost memory is an error and listed; the summary says
     * how to list the rest. */
    EXPECT_EQ(run_scenario("kinds_valgrind", leak_kinds,
                           "GPUMEM_CHECK_SHOW_LEAK_KINDS=definite;"
                           "GPUMEM_CHECK_ERRORS_FOR_LEAK_KINDS=definite"), 2);
    log = log_of("kinds_valgrind");
    EXPECT_CONTAINS(log, "LEAK SUMMARY: still reachable: 36,864 bytes in 3 allocations from 1 "
                         "call site (device 36,864 in 3); --show-leak-kinds=all lists them");
    EXPECT_EQ(strstr(log, "is still reachable") == NULL && strstr(log, "are still reachable") == NULL, 1);
    EXPECT_CONTAINS(log, "ERROR SUMMARY: 2 errors (2 leaks)");
    free(log);
#ifdef GPUMEM_HAVE_JANSSON
    doc = json_of("kinds_valgrind");
    ASSERT_NOT_NULL(doc);
    fs = json_object_get(doc, "findings");
    EXPECT_EQ(json_array_size(fs), 2);
    EXPECT_STR_EQ(json_string_value(json_object_get(json_array_get(fs, 0), "leak_kind")), "definite");
    json_decref(doc);
#endif

    /* --errors-for-leak-kinds=definite alone: all listed, reachable ones not counted. */
    EXPECT_EQ(run_scenario("kinds_all", leak_kinds, "GPUMEM_CHECK_ERRORS_FOR_LEAK_KINDS=definite"), 2);
    log = log_of("kinds_all");
    EXPECT_CONTAINS(log, "36,864 bytes in 3 device allocations by cudaMalloc() are still reachable");
    EXPECT_CONTAINS(log, "is definitely lost");
    EXPECT_CONTAINS(log, "ERROR SUMMARY: 2 errors (2 leaks)");
    EXPECT_EQ(strstr(log, "lists them") == NULL, 1);
    free(log);
#ifdef GPUMEM_HAVE_JANSSON
    doc = json_of("kinds_all");
    ASSERT_NOT_NULL(doc);
    fs = json_object_get(doc, "findings");
    EXPECT_EQ(json_array_size(fs), 3);
    for (size_t i = 0; i < json_array_size(fs); i++) {
        json_t *f = json_array_get(fs, i);
        const char *lk = json_string_value(json_object_get(f, "leak_kind"));
        EXPECT_TRUE(lk && (strcmp(lk, "definite") == 0 || strcmp(lk, "reachable") == 0));
        if (lk && strcmp(lk, "reachable") == 0)
            EXPECT_TRUE(json_is_false(json_object_get(f, "error")));
    }
    json_decref(doc);
#endif
    EXPECT_EQ(run_scenario("kinds_err", leak_kinds,
                           "GPUMEM_CHECK_SHOW_LEAK_KINDS=definite,reachable;"
                           "GPUMEM_CHECK_ERRORS_FOR_LEAK_KINDS=all"), 3);
    /* Nothing listed: the summary still counts both. */
    EXPECT_EQ(run_scenario("kinds_none", leak_kinds,
                           "GPUMEM_CHECK_SHOW_LEAK_KINDS=none;GPUMEM_CHECK_ERRORS_FOR_LEAK_KINDS=none"), 0);
    log = log_of("kinds_none");
    EXPECT_CONTAINS(log, "LEAK SUMMARY: definitely lost: 24,576 bytes");
    EXPECT_EQ(strstr(log, "is definitely lost") == NULL, 1);
    free(log);
    EXPECT_EQ(check_leak_kinds_parse("definite,reachable"), 3);
    EXPECT_EQ(check_leak_kinds_parse("all"), 3);
    EXPECT_EQ(check_leak_kinds_parse("none"), 0);
    EXPECT_EQ(check_leak_kinds_parse("definite,possible"), 1);
    EXPECT_EQ(check_leak_kinds_parse("lost"), -1);
}

/* Dead frames of another thread: a thread copies an allocation's address into a deep frame
 * of a call that returns, then waits in a system call. The word is still in its stack
 * mapping, below its stack pointer, so a scan of the whole mapping would call the allocation
 * still reachable; it is definitely lost. A second allocation, held in a live frame of the
 * same thread, stays still reachable. */
#define DEAD 0x6b0000000000ull
static int dead_pipe[2];
static _Atomic long dead_tid;

__attribute__((noinline)) static void leave_in_dead_frame(uintptr_t v)
{
    volatile uintptr_t deep[512]; /* 4 KiB: far below what the waiting call's frames reach */
    for (size_t i = 0; i < 512; i++)
        deep[i] = 0;
    deep[3] = v;
    __asm__ __volatile__("" : : "r"(deep) : "memory");
}

static void *dead_frame_thread(void *arg)
{
    (void)arg;
    leave_in_dead_frame(DEAD);
    dead_tid = (long)syscall(SYS_gettid);
    volatile uintptr_t live = DEAD + 0x100000;
    char c;
    while (read(dead_pipe[0], &c, 1) < 0) /* waits in read(2) until the scan is over */
        ;
    return (void *)(uintptr_t)live;
}

/* Waits until the thread whose id *tid will hold waits in a system call ('S' in its stat), so
 * that the kernel has its stack pointer. */
static void wait_sleeping(_Atomic long *tid)
{
    while (!*tid)
        usleep(100);
    char path[96], st[512];
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", (long)*tid);
    for (int i = 0; i < 2000; i++) {
        FILE *f = fopen(path, "r");
        size_t got = f ? fread(st, 1, sizeof st - 1, f) : 0;
        if (f)
            fclose(f);
        st[got] = '\0';
        char *close_paren = strrchr(st, ')');
        if (close_paren && close_paren[1] == ' ' && close_paren[2] == 'S')
            break;
        usleep(1000);
    }
}

static void dead_frame(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEAD, 8192, 0, 0, 0);
    check_alloc("cudaMallocAsync", GPUMEM_KIND_DEVICE_ASYNC, DEAD + 0x100000, 12288, 0, 0, 0);
    if (pipe(dead_pipe) != 0)
        return;
    pthread_t t;
    if (pthread_create(&t, NULL, dead_frame_thread, NULL) != 0)
        return;
    wait_sleeping(&dead_tid);
    check_finish("exited", 0);
    if (write(dead_pipe[1], "x", 1) != 1)
        return;
    pthread_join(t, NULL);
    close(dead_pipe[0]);
    close(dead_pipe[1]);
}

static void test_dead_frames(void)
{
    EXPECT_EQ(run_scenario("dead", dead_frame, "GPUMEM_CHECK_ERRORS_FOR_LEAK_KINDS=definite"), 1);
    char *log = log_of("dead");
    EXPECT_CONTAINS(log, "8,192 bytes in 1 device allocation by cudaMalloc() is definitely lost");
    EXPECT_CONTAINS(log, "12,288 bytes in 1 device-async allocation by cudaMallocAsync() is "
                         "still reachable");
    free(log);
}

/* Main's stack is read only below the frame that called main: above it lie the start code's
 * frames, whose saved registers hold values left before main (the upper half of libc's address,
 * 4 GiB-aligned, among them). Here a caller's frame stands for the start code, with a word in it
 * that points into an allocation made and dropped by the program (which calls exit from inside
 * main, so that its own frames are live): still reachable while the start code's frame is
 * unknown, definitely lost once it is known. Known, it also fails if the checker's own frames
 * below check_finish's are read: they keep a copy of the address from check_alloc's. */
#define START_WORD 0x6c0000000000ull
static int start_known;

__attribute__((noinline)) static void start_code_main(void)
{
    check_main_entered(start_known ? (uintptr_t)__builtin_frame_address(0) : 0);
    check_main_returned(0);
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, START_WORD, 4096, 0, 0, 0);
    check_finish("exited", 0);
    _exit(harness_failures ? 200 : (int)check_error_count());
}

__attribute__((noinline)) static void start_code(void)
{
    volatile uintptr_t word = START_WORD + 64;
    start_code_main();
    (void)word;
}

static void test_start_code_not_read(void)
{
    start_known = 0;
    EXPECT_EQ(run_scenario("start_unknown", start_code, NULL), 1);
    char *log = log_of("start_unknown");
    EXPECT_CONTAINS(log, "4,096 bytes in 1 device allocation by cudaMalloc() is still reachable\n"
                         "==PID==    (no stack)\n"
                         "==PID==  It is referenced from a live frame of the stack of the main thread");
    free(log);
    start_known = 1;
    EXPECT_EQ(run_scenario("start_known", start_code, NULL), 1);
    log = log_of("start_known");
    EXPECT_CONTAINS(log, "4,096 bytes in 1 device allocation by cudaMalloc() is definitely lost");
    free(log);
}

/* What is data: a loaded object's writable segments, not an anonymous mapping that merely
 * follows its bss (/proc/self/maps cannot tell the two apart, and under AddressSanitizer an
 * anonymous mapping of stale words sometimes lay there). A page is mapped right after the end of
 * some loaded object's last writable segment and holds an allocation's address: definitely
 * lost. A second address, in this program's bss, is still reachable; a third, in a
 * thread-local variable of another object (tls_word.c), too. A fourth, in one of this
 * program's own thread-local variables, is definitely lost: this program is the checker's
 * own object here, as libgpumem_check.so is in a checked program, and the checker's
 * thread-local variables are its bookkeeping. */
#define BESIDE 0x6a0000000000ull
extern _Thread_local uintptr_t check_test_tls_word;
static volatile uintptr_t beside_bss;
static _Thread_local volatile uintptr_t own_tls_word;

static int map_beside_bss(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), end = 0;
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t e = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && e > end)
            end = e;
    }
    if (!end)
        return 0;
    end = (end + page - 1) & ~(page - 1);
    void *p = mmap((void *)end, page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    if ((uintptr_t)p != end) { /* a kernel without MAP_FIXED_NOREPLACE put it elsewhere */
        munmap(p, page);
        return 0;
    }
    *(void **)arg = p;
    return 1;
}

static void beside_data(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, BESIDE, 4096, 0, 0, 0);
    check_alloc("cudaMallocHost", GPUMEM_KIND_PINNED, BESIDE + 0x100000, 8192, 0, 0, 0);
    check_alloc("cudaMallocManaged", GPUMEM_KIND_MANAGED, BESIDE + 0x200000, 12288, 0, 0, 0);
    check_alloc("cudaMallocAsync", GPUMEM_KIND_DEVICE_ASYNC, BESIDE + 0x300000, 16384, 0, 0, 0);
    volatile uintptr_t *beside = NULL;
    EXPECT_EQ(dl_iterate_phdr(map_beside_bss, (void *)&beside), 1);
    if (!beside)
        return;
    beside[0] = BESIDE;
    beside_bss = BESIDE + 0x100000;
    check_test_tls_word = BESIDE + 0x200000;
    own_tls_word = BESIDE + 0x300000;
}

static void test_data_is_segments(void)
{
    EXPECT_EQ(run_scenario("beside", beside_data, "GPUMEM_CHECK_ERRORS_FOR_LEAK_KINDS=definite"), 2);
    char *log = log_of("beside");
    EXPECT_CONTAINS(log, "4,096 bytes in 1 device allocation by cudaMalloc() is definitely lost");
    EXPECT_CONTAINS(log, "8,192 bytes in 1 pinned allocation by cudaMallocHost() is still "
                         "reachable");
    EXPECT_CONTAINS(log, "12,288 bytes in 1 managed allocation by cudaMallocManaged() is still "
                         "reachable");
    EXPECT_CONTAINS(log, "16,384 bytes in 1 device-async allocation by cudaMallocAsync() is "
                         "definitely lost");
    EXPECT_CONTAINS(log, "It is referenced from the global beside_bss in ");
    EXPECT_CONTAINS(log, "It is referenced from a thread-local variable of ");
    EXPECT_CONTAINS(log, "libcheck_tls_word.so (the main thread)");
    free(log);
}

/* Threads at exit: a thread that allocated, kept the address in a local and ended (joined)
 * leaves the word in its stack, which glibc keeps mapped for the next thread: definitely lost,
 * since no thread can use that stack's words any more. A detached thread still blocked at exit
 * with the address in a live frame: still reachable, from its stack. A global: still
 * reachable, by the global's name. By default all three are errors; with
 * --errors-for-leak-kinds=definite only the first. Addresses no other test uses. */
#define THREADS 0x6c0000000000ull
static volatile uintptr_t threads_global;
static int threads_pipe[2];
static _Atomic long threads_blocked_tid;

static void *finished_thread(void *arg)
{
    (void)arg;
    /* Deep enough (4 KiB) that what start_thread calls after the thread's function returned
     * does not overwrite it, as in a std::thread's frames. */
    leave_in_dead_frame(THREADS);
    return NULL;
}

static void *blocked_thread(void *arg)
{
    (void)arg;
    volatile uintptr_t live = THREADS + 0x100000;
    threads_blocked_tid = (long)syscall(SYS_gettid);
    char c;
    while (read(threads_pipe[0], &c, 1) < 0) /* waits in read(2) until the process ends */
        ;
    return (void *)(uintptr_t)live;
}

static void thread_leaks(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, THREADS, 262144, 0, 0, 0);
    check_alloc("cudaMallocAsync", GPUMEM_KIND_DEVICE_ASYNC, THREADS + 0x100000, 8192, 0, 0, 0);
    check_alloc("cudaMallocManaged", GPUMEM_KIND_MANAGED, THREADS + 0x200000, 4096, 0, 0, 0);
    if (pipe(threads_pipe) != 0)
        return;
    /* The blocked thread first: a thread made after the finished one ended would get its
     * cached stack, stale words and all. */
    pthread_t t;
    if (pthread_create(&t, NULL, blocked_thread, NULL) != 0 || pthread_detach(t) != 0)
        return;
    wait_sleeping(&threads_blocked_tid);
    if (pthread_create(&t, NULL, finished_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
        return;
    threads_global = THREADS + 0x200000;
    check_finish("exited", 0); /* with the blocked thread still in read(2) */
    /* Its stack is named by its thread id, which only this process knows. */
    char *log = read_file(getenv("GPUMEM_CHECK_LOG")), want[96];
    snprintf(want, sizeof want, "It is referenced from a live frame of the stack of thread %ld\n",
             (long)threads_blocked_tid);
    EXPECT_CONTAINS(log, want);
    free(log);
}

/* A thread that runs (spins) at exit has no stack pointer the kernel gives: the stacks no
 * other thread owns are read whole then, as one of them is its, and the address in its live
 * frame makes the allocation still reachable. */
static atomic_int spinning;

static void *spinning_thread(void *arg)
{
    (void)arg;
    volatile uintptr_t live = THREADS + 0x300000;
    atomic_store(&spinning, 1);
    while (atomic_load(&spinning) == 1)
        ;
    return (void *)(uintptr_t)live;
}

static void running_thread(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, THREADS + 0x300000, 16384, 0, 0, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, spinning_thread, NULL) != 0)
        return;
    while (atomic_load(&spinning) != 1)
        usleep(100);
    check_finish("exited", 0);
    atomic_store(&spinning, 2);
    pthread_join(t, NULL);
}

static void test_thread_leaks(void)
{
    EXPECT_EQ(run_scenario("threads", thread_leaks, NULL), 3);
    char *log = log_of("threads");
    EXPECT_CONTAINS(log, "262,144 bytes in 1 device allocation by cudaMalloc() is definitely lost");
    EXPECT_CONTAINS(log, "8,192 bytes in 1 device-async allocation by cudaMallocAsync() is still "
                         "reachable");
    EXPECT_CONTAINS(log, "It is referenced from a live frame of the stack of thread ");
    EXPECT_CONTAINS(log, "4,096 bytes in 1 managed allocation by cudaMallocManaged() is still "
                         "reachable");
    EXPECT_CONTAINS(log, "It is referenced from the global threads_global in ");
    EXPECT_CONTAINS(log, "ERROR SUMMARY: 3 errors (3 leaks)");
    free(log);
    /* valgrind's counting, on request. */
    EXPECT_EQ(run_scenario("threads_definite", thread_leaks,
                           "GPUMEM_CHECK_ERRORS_FOR_LEAK_KINDS=definite"), 1);
    log = log_of("threads_definite");
    EXPECT_CONTAINS(log, "262,144 bytes in 1 device allocation by cudaMalloc() is definitely lost");
    EXPECT_CONTAINS(log, "ERROR SUMMARY: 1 error (1 leak)");
    free(log);
    EXPECT_EQ(run_scenario("running", running_thread, NULL), 1);
    log = log_of("running");
    EXPECT_CONTAINS(log, "16,384 bytes in 1 device allocation by cudaMalloc() is still reachable");
    EXPECT_CONTAINS(log, "It is referenced from the stack of a thread that was running");
    free(log);
}

static void suppressed_leaks(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 4096, 0, 0, 0);
    check_alloc("cudaMallocHost", GPUMEM_KIND_PINNED, PIN, 4096, 0, 0, 0);
    EXPECT_EQ(check_release_begin("cudaFree", 1u << GPUMEM_KIND_DEVICE, PIN, 0), CHECK_REPORTED);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_suppressions(void)
{
    char path[256], env[512];
    snprintf(path, sizeof path, "%s/leaks.supp", dir);
    write_text(path, "# device leaks are the framework's\n"
                     "{\n   framework device cache\n   gpumem:leak\n   call:cudaMalloc\n"
                     "   ...\n}\n"
                     "{\n  any mismatch\n  gpumem:mismatched-release\n  call:cuda*\n}\n");
    snprintf(env, sizeof env, "GPUMEM_CHECK_SUPPRESSIONS=%s", path);
    /* The pinned leak stays; the device leak and the mismatch are suppressed. */
    EXPECT_EQ(run_scenario("suppressed", suppressed_leaks, env), 1);
    char *log = log_of("suppressed");
    EXPECT_CONTAINS(log, "used suppression:      1 framework device cache");
    EXPECT_CONTAINS(log, "used suppression:      1 any mismatch");
    EXPECT_CONTAINS(log, "ERROR SUMMARY: 1 error (1 leak), 2 suppressed");
    EXPECT_EQ(strstr(log, "Mismatched") == NULL, 1);
    free(log);

    /* --gen-suppressions prints one that the parser takes back. */
    EXPECT_EQ(run_scenario("gen", suppressed_leaks, "GPUMEM_CHECK_GEN_SUPPRESSIONS=yes"), 3);
    log = log_of("gen");
    EXPECT_CONTAINS(log, "{\n   <insert_a_suppression_name_here>\n   gpumem:mismatched-release\n"
                             "   call:cudaFree\n}\n");
    EXPECT_CONTAINS(log, "   gpumem:leak\n   call:cudaMallocHost\n}\n");
    free(log);
}

static void test_suppression_files(void)
{
    static const struct {
        const char *text, *error;
    } bad[] = {
        {"x\n", "1: expected '{' to start a suppression"},
        {"{\n}\n", "2: a suppression starts with its name"},
        {"{\n name\n kind:leak\n}\n", "3: the second line must be gpumem:KIND"},
        {"{\n name\n gpumem:leek\n}\n", "3: unknown finding kind after gpumem:"},
        {"{\n name\n gpumem:leak\n frame:main\n}\n", "4: expected call:, fun:, src:, obj:"},
        {"{\n name\n gpumem:*\n fun:main\n", "the last suppression has no closing '}'"},
    };
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/bad.supp", dir);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_text(path, bad[i].text);
        EXPECT_EQ(check_supp_load(path, err, sizeof err), -1);
        EXPECT_CONTAINS(err, bad[i].error);
    }
    EXPECT_EQ(check_supp_load("/nonexistent/x.supp", err, sizeof err), -1);
    EXPECT_CONTAINS(err, "cannot read the suppression file");

    /* Frame patterns: fun, src (file or file:line), obj, and '...'. */
    write_text(path, "{\n a\n gpumem:*\n fun:inner\n ...\n src:main.cu:12\n}\n"
                     "{\n b\n gpumem:leak\n obj:*libfoo.so\n fun:main\n}\n");
    EXPECT_EQ(check_supp_load(path, err, sizeof err), 0);
    gpumem__frame f[3] = {{.func = "inner", .file = "/src/a.cu", .line = 3},
                          {.func = "middle", .file = "/src/b.cu", .line = 7},
                          {.func = "main", .file = "/src/main.cu", .line = 12}};
    EXPECT_STR_EQ(check_supp_match(CHECK_DOUBLE, "cudaFree", f, 3), "a");
    f[2].line = 13;
    EXPECT_NULL(check_supp_match(CHECK_DOUBLE, "cudaFree", f, 3));
    gpumem__frame g[2] = {{.func = "lib_alloc", .object = "/opt/libfoo.so"},
                          {.func = "main", .file = "m.c", .line = 1}};
    EXPECT_STR_EQ(check_supp_match(CHECK_LEAK, "cudaMalloc", g, 2), "b");
    EXPECT_NULL(check_supp_match(CHECK_INVALID, "cudaMalloc", g, 2));
    g[0].func = "other";
    EXPECT_STR_EQ(check_supp_match(CHECK_LEAK, "cudaMalloc", g, 2), "b"); /* obj: not fun: */
    g[0].object = "/opt/libbar.so";
    EXPECT_NULL(check_supp_match(CHECK_LEAK, "cudaMalloc", g, 2));
    check_supp_clear();
    EXPECT_NULL(check_supp_match(CHECK_DOUBLE, "cudaFree", f, 3));
}

/* Writes the suppression generated for a leak of call with stack f (n frames) and loads it;
 * 0, or -1 when either failed. */
static int generate_and_load(const char *call, const gpumem__frame *f, int n)
{
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/generated.supp", dir);
    FILE *out = fopen(path, "w");
    if (!out)
        return -1;
    check_supp_generate(out, CHECK_LEAK, call, f, n);
    if (fclose(out) != 0)
        return -1;
    return check_supp_load(path, err, sizeof err);
}

/* A generated suppression matches the finding it was made from, also where the C++ names hold
 * glob characters ('[' of an array type would otherwise open a set that misses it) or white
 * space at their ends. */
static void test_generated_suppression_matches(void)
{
    gpumem__frame f[2] = {{.func = "void f<float[4]>(float*)"}, {.func = "main?\\x"}};
    EXPECT_EQ(generate_and_load("cudaMalloc", f, 2), 0);
    EXPECT_STR_EQ(check_supp_match(CHECK_LEAK, "cudaMalloc", f, 2),
                  "<insert_a_suppression_name_here>");
    gpumem__frame other[2] = {{.func = "void f<float4>(float*)"}, {.func = "main?\\x"}};
    EXPECT_NULL(check_supp_match(CHECK_LEAK, "cudaMalloc", other, 2));
    check_supp_clear();

    /* White space at a name's ends, which the loader's trimming of lines would drop. */
    gpumem__frame w[2] = {{.func = "f "}, {.func = " \tg"}};
    EXPECT_EQ(generate_and_load("cudaFree ", w, 2), 0);
    EXPECT_STR_EQ(check_supp_match(CHECK_LEAK, "cudaFree ", w, 2),
                  "<insert_a_suppression_name_here>");
    check_supp_clear();
}

static void test_kind_names(void)
{
    for (int k = 0; k < CHECK_KIND_COUNT; k++)
        EXPECT_EQ(check_kind_from_name(check_kind_name(k)), k);
    EXPECT_NULL(check_kind_name(CHECK_KIND_COUNT));
    EXPECT_EQ(check_kind_from_name("leaks"), -1);
    EXPECT_STR_EQ(gpumem_kind_name(GPUMEM_KIND_REGISTERED), "registered");
    EXPECT_STR_EQ(gpumem_kind_name(GPUMEM_KIND_VIRTUAL), "virtual");
    /* Handles never meet addresses. */
    EXPECT_NE(check_handle_key(0x7f0000000000ull >> 8), (uintptr_t)0x7f0000000000ull);
    /* The release pairing, from src/kinds.def. */
    EXPECT_EQ(check_release_kinds("cudaFree"), BIT(DEVICE) | BIT(MANAGED) | BIT(DEVICE_ASYNC) | BIT(GRAPH));
    EXPECT_EQ(check_release_kinds("cudaFreeAsync"), BIT(DEVICE) | BIT(DEVICE_ASYNC) | BIT(GRAPH));
    EXPECT_EQ(check_release_kinds("cuMemFreeHost"), BIT(PINNED) | BIT(HOST));
    EXPECT_EQ(check_release_kinds("cuMemRelease"), BIT(VIRTUAL));
    EXPECT_EQ(check_release_kinds("free"), 0u);
    EXPECT_STR_EQ(check_right_release(GPUMEM_KIND_PINNED, "cuMemAllocHost"), "cuMemFreeHost");
    EXPECT_STR_EQ(check_right_release(GPUMEM_KIND_PINNED, "cudaHostAlloc"), "cudaFreeHost");
    EXPECT_STR_EQ(check_right_release(GPUMEM_KIND_DEVICE_ASYNC, "cudaMallocAsync"), "cudaFreeAsync");
    EXPECT_STR_EQ(check_right_release(GPUMEM_KIND_VIRTUAL, "cuMemImportFromShareableHandle"),
                  "cuMemRelease");
    EXPECT_STR_EQ(check_right_release(GPUMEM_KIND_VIRTUAL, "cuMemMap"), "cuMemUnmap");
    EXPECT_STR_EQ(check_right_release(GPUMEM_KIND_RESERVED, "cuMemAddressReserve"), "cuMemAddressFree");
    EXPECT_STR_EQ(check_right_release(GPUMEM_KIND_GRAPH, "cuGraphAddMemAllocNode"),
                  "cuGraphAddMemFreeNode");
    EXPECT_STR_EQ(check_right_release(GPUMEM_KIND_ARRAY, "cudaMalloc3DArray"), "cudaFreeArray");
    EXPECT_STR_EQ(check_right_release(GPUMEM_KIND_DEVICE, "cuMemAlloc"), "cuMemFree");
    EXPECT_STR_EQ(check_right_release(GPUMEM_KIND_MANAGED, "cudaMallocManaged"), "cudaFree");
}

static void test_leak_check_modes(void)
{
    EXPECT_EQ(run_scenario("summary", suppressed_leaks, "GPUMEM_CHECK_LEAK=summary"), 3);
    char *log = log_of("summary");
    EXPECT_CONTAINS(log, "LEAK SUMMARY: definitely lost: 8,192 bytes in 2 allocations from 2 call sites "
                             "(device 4,096 in 1, pinned 4,096 in 1)");
    EXPECT_CONTAINS(log, "--leak-check=full shows where");
    EXPECT_EQ(strstr(log, " is definitely lost") == NULL, 1);
    free(log);
    EXPECT_EQ(run_scenario("noleak", suppressed_leaks, "GPUMEM_CHECK_LEAK=no"), 1);
    log = log_of("noleak");
    EXPECT_EQ(strstr(log, "LEAK SUMMARY") == NULL, 1);
    EXPECT_CONTAINS(log, "ERROR SUMMARY: 1 error (0 leaks)");
    free(log);
}

/* -q: a clean run prints nothing; a run with findings prints them and the error summary, but
 * not the peak line or the suppressions used. */
static void test_quiet(void)
{
    EXPECT_EQ(run_scenario("quiet_clean", clean_run, "GPUMEM_CHECK_QUIET=1"), 0);
    char *log = log_of("quiet_clean");
    EXPECT_STR_EQ(log ? log : "(no log)", "");
    free(log);
    EXPECT_EQ(run_scenario("quiet_found", every_finding, "GPUMEM_CHECK_QUIET=1"), 7);
    log = log_of("quiet_found");
    EXPECT_CONTAINS(log, "are definitely lost");
    EXPECT_CONTAINS(log, "LEAK SUMMARY: ");
    EXPECT_CONTAINS(log, "ERROR SUMMARY: 7 errors");
    EXPECT_EQ(strstr(log, "PEAK:") == NULL, 1);
    free(log);
}

/* A child of the checked program (its pid is not GPUMEM_CHECK_ROOT) writes NAME.PID. */
static void test_child_file_names(void)
{
    EXPECT_EQ(run_scenario("child", suppressed_leaks, "GPUMEM_CHECK_ROOT=1"), 3);
    char *log = log_of("child");
    EXPECT_NULL(log); /* not at the plain name */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c '^child\\.log\\.[0-9]*$' >%s/count", dir, dir);
    EXPECT_EQ(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/count", dir);
    char *count = read_file(cmd);
    EXPECT_STR_EQ(count, "1\n");
    free(count);
}

/* A process of a parallel job (torchrun's RANK, Open MPI's OMPI_COMM_WORLD_RANK, ...): its
 * report starts with its rank, the ERROR SUMMARY names it, the JSON and the status file carry
 * it, and %r in a file name is the rank ("norank-PID" without one). */
static void one_leak(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 4096, 0, 0, 0);
}

static void test_ranks(void)
{
    char cmd[512], env[512];
    snprintf(cmd, sizeof cmd, "rm -f %s/[0-9]* %s/ranked.*", dir, dir);
    EXPECT_EQ(system(cmd), 0);
    snprintf(env, sizeof env, "GPUMEM_CHECK_LOG=%s/ranked.%%r.log;OMPI_COMM_WORLD_RANK=3;"
             "OMPI_COMM_WORLD_LOCAL_RANK=1", dir);
    EXPECT_EQ(run_scenario("ranked", one_leak, env), 1);
    char *log = log_of("ranked.3");
    EXPECT_TRUE(log && strncmp(log, "==PID== gpumem check: rank 3 (pid ", 34) == 0);
    EXPECT_CONTAINS(log, ", local rank 1, from OMPI_COMM_WORLD_RANK): ");
    EXPECT_CONTAINS(log, "==PID== ERROR SUMMARY of rank 3 (pid ");
    EXPECT_CONTAINS(log, "): 1 error (1 leak), 0 suppressed\n");
    free(log);
    snprintf(cmd, sizeof cmd, "cat %s/[0-9]* > %s/statuses", dir, dir);
    EXPECT_EQ(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/statuses", dir);
    char *st = read_file(cmd);
    EXPECT_CONTAINS(st, "\nallocations 1\n");
    EXPECT_CONTAINS(st, "\nrank 3\nlocal_rank 1\n");
    free(st);
#ifdef GPUMEM_HAVE_JANSSON
    json_t *root = json_of("ranked");
    ASSERT_NOT_NULL(root);
    EXPECT_EQ(json_integer_value(json_object_get(root, "rank")), 3);
    EXPECT_EQ(json_integer_value(json_object_get(root, "local_rank")), 1);
    EXPECT_STR_EQ(json_string_value(json_object_get(root, "rank_from")), "OMPI_COMM_WORLD_RANK");
    json_decref(root);
#endif
    /* RANK (torchrun) comes first; a value that is no number is no rank. */
    snprintf(env, sizeof env, "GPUMEM_CHECK_LOG=%s/ranked.%%r.log;RANK=x;SLURM_PROCID=7", dir);
    EXPECT_EQ(run_scenario("ranked", one_leak, env), 1);
    log = log_of("ranked.7");
    EXPECT_CONTAINS(log, ", from SLURM_PROCID): ");
    free(log);
    /* Without a rank: %r is norank-PID, and the report is as before. */
    snprintf(env, sizeof env, "GPUMEM_CHECK_LOG=%s/ranked.%%r.log", dir);
    EXPECT_EQ(run_scenario("ranked", one_leak, env), 1);
    snprintf(cmd, sizeof cmd, "cat %s/ranked.norank-[0-9]*.log > %s/norank", dir, dir);
    EXPECT_EQ(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/norank", dir);
    log = normalize(read_file(cmd));
    EXPECT_TRUE(log && strncmp(log, "==PID== 4,096 bytes in 1 device allocation", 42) == 0);
    EXPECT_CONTAINS(log, "==PID== ERROR SUMMARY: 1 error (1 leak), 0 suppressed\n");
    free(log);
}

/* A forked child that does not exec writes nothing: the registry it has is its parent's. */
static void forked_child(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 4096, 0, 0, 0);
    check_forked();
}

static void test_forked_child(void)
{
    EXPECT_EQ(run_scenario("forked", forked_child, NULL), 0);
    char *log = log_of("forked");
    EXPECT_NULL(log);
    free(log);
}

/* Files that cannot be written: the report goes to stderr, and each failure says which file
 * and why. */
static void test_unwritable_files(void)
{
    EXPECT_EQ(run_scenario("nolog", suppressed_leaks,
                           "GPUMEM_CHECK_LOG=/nonexistent/dir/check.log;"
                           "GPUMEM_CHECK_JSON=/nonexistent/dir/check.json;"
                           "GPUMEM_CHECK_STATUS=/nonexistent/dir"),
              3);
    char *err = stderr_of("nolog");
    EXPECT_CONTAINS(err, "==PID== gpumem check: warning: cannot write the log to "
                         "/nonexistent/dir/check.log (No such file or directory); writing it "
                         "here\n");
    EXPECT_CONTAINS(err, "==PID== Mismatched release: cudaFree() of 4,096 bytes");
#ifdef GPUMEM_HAVE_JANSSON
    EXPECT_CONTAINS(err, "==PID== gpumem check: error: cannot write the JSON report to "
                         "/nonexistent/dir/check.json (No such file or directory)\n");
#endif
    EXPECT_CONTAINS(err, "==PID== gpumem check: warning: cannot write /nonexistent/dir/");
    EXPECT_CONTAINS(err, "(No such file or directory): gpumem check's exit status will not "
                         "count this process\n");
    free(err);
}

/* A full disk: every failed write is said on stderr, never lost without a word. */
static void test_full_disk(void)
{
    EXPECT_EQ(run_scenario("fulldisk", suppressed_leaks,
                           "GPUMEM_CHECK_LOG=/dev/full;GPUMEM_CHECK_JSON=/dev/full"),
              3);
    char *err = stderr_of("fulldisk");
    EXPECT_CONTAINS(err, "==PID== gpumem check: error: the log /dev/full was not written "
                         "completely (No space left on device); its findings are lost");
#ifdef GPUMEM_HAVE_JANSSON
    EXPECT_CONTAINS(err, "==PID== gpumem check: error: cannot write the JSON report to "
                         "/dev/full (");
#endif
    free(err);
}

static void status_and_unchecked(void)
{
    check_unchecked("another CUPTI subscriber is present");
}

/* The engine reads a word setting by its index among the choices settings.def lists; the
 * enums it compares with must follow that order, and an unknown value falls back to the
 * default's index. */
static void test_setting_choices(void)
{
    EXPECT_EQ(check_choice_index(check_setting_choices(CHECK_SET_LEAK), "no"), LEAK_NO);
    EXPECT_EQ(check_choice_index(check_setting_choices(CHECK_SET_LEAK), "summary"), LEAK_SUMMARY);
    EXPECT_EQ(check_choice_index(check_setting_choices(CHECK_SET_LEAK), "full"), LEAK_FULL);
    EXPECT_EQ(check_choice_index(check_setting_choices(CHECK_SET_FAILED_CALLS), "error"),
              CHECK_CALLS_ERROR);
    EXPECT_EQ(check_choice_index(check_setting_choices(CHECK_SET_FAILED_CALLS), "note"),
              CHECK_CALLS_NOTE);
    EXPECT_EQ(check_choice_index(check_setting_choices(CHECK_SET_FAILED_CALLS), "no"),
              CHECK_CALLS_NO);
    EXPECT_EQ(check_choice_index("no|summary|full", "sum"), -1);
    EXPECT_EQ(check_choice_index("no|summary|full", "fulls"), -1);
    EXPECT_EQ(check_choice_index("no|summary|full", ""), -1);
    EXPECT_EQ(check_choice_index("", "no"), -1);
    const char *name = check_setting_name(CHECK_SET_LEAK);
    char *saved = getenv(name) ? strdup(getenv(name)) : NULL;
    setenv(name, "summary", 1);
    EXPECT_EQ(check_setting_choice(CHECK_SET_LEAK), LEAK_SUMMARY);
    setenv(name, "bogus", 1);
    EXPECT_EQ(check_setting_choice(CHECK_SET_LEAK), LEAK_FULL);
    unsetenv(name);
    EXPECT_EQ(check_setting_choice(CHECK_SET_LEAK), LEAK_FULL);
    EXPECT_TRUE(check_setting_default(CHECK_SET_LOG) == NULL);
    EXPECT_TRUE(check_setting_value(CHECK_SET_LOG) == NULL || *check_setting_value(CHECK_SET_LOG));
    if (saved)
        setenv(name, saved, 1);
    free(saved);
}

static void test_status_files(void)
{
    /* Status files are named by pid: clear the folder's earlier ones first. */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -f %s/[0-9]*", dir);
    EXPECT_EQ(system(cmd), 0);
    EXPECT_EQ(run_scenario("unchecked", status_and_unchecked, NULL), 0);
    char *log = log_of("unchecked");
    EXPECT_CONTAINS(log, "==PID== gpumem check: another CUPTI subscriber is present; this "
                             "process runs unchecked\n");
    free(log);
    snprintf(cmd, sizeof cmd, "cat %s/[0-9]* > %s/statuses", dir, dir);
    EXPECT_EQ(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/statuses", dir);
    char *st = read_file(cmd);
    /* What `gpumem check` reads: its exit status and its lines for many processes. */
    static const char head[] = "errors 0\nstatus unchecked\ncode 0\nleaks 0\nleaked_bytes 0\n"
                               "allocations 0\ncommand ";
    EXPECT_TRUE(st && strncmp(st, head, sizeof head - 1) == 0);
    EXPECT_CONTAINS(st, "test_check\n");
    free(st);
}

#ifdef GPUMEM_HAVE_JANSSON
static void test_json(void)
{
    json_t *root = json_of("every");
    ASSERT_NOT_NULL(root);
    EXPECT_STR_EQ(json_string_value(json_object_get(root, "schema")), "gpumem-check/1");
    EXPECT_STR_EQ(json_string_value(json_object_get(root, "status")), "exited");
    EXPECT_EQ(json_integer_value(json_object_get(root, "exit_code")), 0);
    json_t *findings = json_object_get(root, "findings");
    ASSERT_EQ(json_array_size(findings), 7);
    static const char *const kinds[] = {"mismatched-release", "double-free", "invalid-free",
                                        "interior-free", "failed-alloc", "leak", "leak"};
    for (size_t i = 0; i < 7; i++)
        EXPECT_STR_EQ(json_string_value(json_object_get(json_array_get(findings, i), "kind")),
                      kinds[i]);
    json_t *m = json_array_get(findings, 0);
    EXPECT_STR_EQ(json_string_value(json_object_get(m, "call")), "cudaFree");
    EXPECT_STR_EQ(json_string_value(json_object_get(m, "memory")), "pinned");
    EXPECT_STR_EQ(json_string_value(json_object_get(m, "alloc_call")), "cudaMallocHost");
    EXPECT_EQ(json_integer_value(json_object_get(m, "bytes")), 8192);
    json_t *d = json_array_get(findings, 1);
    EXPECT_STR_EQ(json_string_value(json_object_get(d, "first_release_call")), "cudaFree");
    EXPECT_EQ(json_object_get(json_array_get(findings, 2), "memory") == NULL, 1);
    EXPECT_EQ(json_integer_value(json_object_get(json_array_get(findings, 3), "offset")), 256);
    EXPECT_STR_EQ(json_string_value(json_object_get(json_array_get(findings, 4), "error")),
                  "cudaErrorMemoryAllocation");
    json_t *leak = json_array_get(findings, 5);
    EXPECT_STR_EQ(json_string_value(json_object_get(leak, "alloc_call")), "cudaMalloc");
    EXPECT_EQ(json_integer_value(json_object_get(leak, "count")), 2);
    EXPECT_EQ(json_integer_value(json_object_get(leak, "bytes")), 8192);
    EXPECT_EQ(json_object_get(leak, "call") == NULL, 1);
    json_t *sum = json_object_get(root, "summary");
    EXPECT_EQ(json_integer_value(json_object_get(sum, "errors")), 7);
    EXPECT_EQ(json_integer_value(json_object_get(sum, "leaks")), 2);
    EXPECT_EQ(json_integer_value(json_object_get(sum, "leaked_bytes")), 16384);
    json_t *peak = json_object_get(root, "peak");
    EXPECT_EQ(json_integer_value(json_object_get(peak, "managed")), 1 << 20);
    EXPECT_EQ(json_integer_value(json_object_get(peak, "device")), 8192);
    json_decref(root);

    root = json_of("suppressed");
    ASSERT_NOT_NULL(root);
    EXPECT_STR_EQ(json_string_value(json_object_get(json_array_get(json_object_get(root, "findings"), 0),
                                                    "suppressed")),
                  "any mismatch");
    EXPECT_EQ(json_integer_value(json_object_get(json_object_get(root, "summary"), "suppressed")), 2);
    json_decref(root);
}
#endif

/* Two devices: a leak on each, one released allocation on device 1, a failed allocation on
 * device 1. Each leak names its device, each device gets a line, the summary merges them. */
static void two_devices(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 4096, 0, 0, 0);
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV + 0x10000000, 3 << 20, 1, 0, 0);
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV + 0x20000000, 1 << 20, 1, 0, 0);
    if (check_release_begin("cudaFree", 1u << GPUMEM_KIND_DEVICE, DEV + 0x20000000, 0) == CHECK_GO)
        check_release_end(DEV + 0x20000000, 1);
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, 0, (size_t)1 << 50, 1, 2, 0);
}

/* One device: no device lines, no device in the leak lines (as before). */
static void one_device(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 4096, 0, 0, 0);
}

static void test_devices(void)
{
    EXPECT_EQ(run_scenario("devices", two_devices, "GPUMEM_CHECK_LEAK=full"), 3);
    char *log = log_of("devices");
    EXPECT_CONTAINS(log, "==PID== 3,145,728 bytes in 1 device allocation on device 1 by "
                         "cudaMalloc() is definitely lost");
    EXPECT_CONTAINS(log, "==PID== 4,096 bytes in 1 device allocation on device 0 by cudaMalloc() "
                         "is definitely lost");
    EXPECT_CONTAINS(log, "LEAK SUMMARY: definitely lost: 3,149,824 bytes in 2 allocations from "
                         "2 call sites");
    EXPECT_CONTAINS(log, "==PID== DEVICE 0: 4,096 bytes left in 1 allocation (4,096 definitely "
                         "lost, 0 still reachable), peak 4.0 KiB, 1 allocation made");
    EXPECT_CONTAINS(log, "==PID== DEVICE 1: 3,145,728 bytes left in 1 allocation (3,145,728 "
                         "definitely lost, 0 still reachable), peak 4.0 MiB, 2 allocations made");
    free(log);
    EXPECT_EQ(run_scenario("one_device", one_device, "GPUMEM_CHECK_LEAK=full"), 1);
    log = log_of("one_device");
    EXPECT_CONTAINS(log, "4,096 bytes in 1 device allocation by cudaMalloc() is definitely lost");
    EXPECT_TRUE(log && !strstr(log, "DEVICE ") && !strstr(log, "on device"));
    free(log);
#ifdef GPUMEM_HAVE_JANSSON
    json_t *root = json_of("devices");
    ASSERT_NOT_NULL(root);
    json_t *devs = json_object_get(root, "devices");
    ASSERT_EQ(json_array_size(devs), 2);
    json_t *d1 = json_array_get(devs, 1);
    EXPECT_EQ(json_integer_value(json_object_get(d1, "device")), 1);
    EXPECT_EQ(json_integer_value(json_object_get(d1, "allocations")), 2);
    EXPECT_EQ(json_integer_value(json_object_get(d1, "peak_bytes")), 4 << 20);
    EXPECT_EQ(json_integer_value(json_object_get(d1, "leaks")), 1);
    EXPECT_EQ(json_integer_value(json_object_get(d1, "leaked_bytes")), 3 << 20);
    EXPECT_EQ(json_integer_value(json_object_get(json_array_get(devs, 0), "leaked_bytes")), 4096);
    json_t *sum = json_object_get(root, "summary");
    EXPECT_EQ(json_integer_value(json_object_get(sum, "leaks")), 2);
    EXPECT_EQ(json_integer_value(json_object_get(sum, "leaked_bytes")), (3 << 20) + 4096);
    json_t *findings = json_object_get(root, "findings");
    int failed_on_1 = 0, leaks_on[2] = {0, 0};
    for (size_t i = 0; i < json_array_size(findings); i++) {
        json_t *f = json_array_get(findings, i);
        const char *kind = json_string_value(json_object_get(f, "kind"));
        int dev = (int)json_integer_value(json_object_get(f, "device"));
        if (kind && strcmp(kind, "failed-alloc") == 0)
            failed_on_1 += dev == 1;
        if (kind && strcmp(kind, "leak") == 0 && dev >= 0 && dev < 2)
            leaks_on[dev]++;
    }
    EXPECT_EQ(failed_on_1, 1);
    EXPECT_EQ(leaks_on[0], 1);
    EXPECT_EQ(leaks_on[1], 1);
    json_decref(root);
#endif
}

/* With stacks on: the report names this file and function. */
static void with_stacks(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 4096, 0, 0, gpumem__stack_capture(0));
}

static void test_stacks(void)
{
    EXPECT_EQ(run_scenario("stacks", with_stacks, "GPUMEM_CHECK_STACKS=1"), 1);
    char *log = log_of("stacks");
    EXPECT_CONTAINS(log, "with_stacks");
#ifdef GPUMEM_HAVE_LIBDW
    EXPECT_CONTAINS(log, "test_check.c:");
#endif
    free(log);
}

int main(void)
{
    main_frame = (uintptr_t)__builtin_frame_address(0);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_kind_names);
    RUN(test_every_finding_golden);
    RUN(test_clean_run);
    RUN(test_refused_release);
    RUN(test_host_free);
    RUN(test_device_reset);
    RUN(test_vmm_model);
    RUN(test_vmm_two_devices);
    RUN(test_failed_calls);
    RUN(test_failed_calls_threads);
    RUN(test_calls_seen);
    RUN(test_abort_peak);
    RUN(test_ends_without_exit);
    RUN(test_report_files);
    RUN(test_arrays);
    RUN(test_graphs_and_reservations);
    RUN(test_host_realloc);
    RUN(test_leak_kinds);
    RUN(test_dead_frames);
    RUN(test_start_code_not_read);
    RUN(test_data_is_segments);
    RUN(test_thread_leaks);
    RUN(test_default_suppressions);
    RUN(test_suppressions);
    RUN(test_suppression_files);
    RUN(test_generated_suppression_matches);
    RUN(test_leak_check_modes);
    RUN(test_child_file_names);
    RUN(test_ranks);
    RUN(test_forked_child);
    RUN(test_unwritable_files);
    RUN(test_full_disk);
    RUN(test_setting_choices);
    RUN(test_status_files);
    RUN(test_quiet);
#ifdef GPUMEM_HAVE_JANSSON
    RUN(test_json);
#endif
    RUN(test_stacks);
    RUN(test_devices);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (!harness_failures && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return harness_exit();
}
