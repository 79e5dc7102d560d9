/* gpumem check's engine: what a CUDA program's memory calls do to the registry, the findings
 * they make, and the reports.
 *
 * The engine is the library's registry, stacks and leak grouping (src/) driven by events from
 * outside: the CUPTI front end (cupti.c) and the host free/delete front end (preload.c) call
 * these entry points, and so do the host tests, with synthetic events. Every entry point is
 * thread-safe. Nothing here calls CUDA. */
#ifndef GPUMEM_CHECK_ENGINE_H
#define GPUMEM_CHECK_ENGINE_H

#include <stddef.h>
#include <stdint.h>

/* Finding kinds, as the text and JSON reports and the suppression files name them. */
typedef enum {
    CHECK_LEAK,
    CHECK_MISMATCHED,
    CHECK_DOUBLE,
    CHECK_INVALID,
    CHECK_INTERIOR,
    CHECK_FAILED_ALLOC,
    CHECK_KIND_COUNT
} check_kind;

/* "leak", "mismatched-release", "double-free", "invalid-free", "interior-free",
 * "failed-alloc"; NULL for a bad value. */
const char *check_kind_name(int kind);
/* The kind named so, or -1. */
int check_kind_from_name(const char *name);

/* Reads the GPUMEM_CHECK_* variables `gpumem check` sets (settings.def) and sets up the
 * registry. Idempotent. The first output (a finding, or the report at the end) opens the log. */
void check_setup(void);

/* Set on a thread while gpumem check itself calls CUDA or the allocator, so that the front
 * ends let those calls through unobserved. Initial-exec: touching it never allocates. */
extern _Thread_local int check_tls_busy __attribute__((tls_model("initial-exec")));

/* An allocation call returned. cuda_error 0: [base, base + bytes) of the given gpumem kind is
 * live now (for virtual memory handles, base is check_handle_key(handle)). Otherwise the call
 * failed with that CUDA error: a failed-alloc finding. stack: gpumem__stack_capture() id. */
void check_alloc(const char *call, int kind, uintptr_t base, size_t bytes, int device,
                 int cuda_error, uint32_t stack);

/* Registry key of a cuMemCreate handle: apart from every address. */
uintptr_t check_handle_key(unsigned long long handle);
/* Registry key of a CUDA array or mipmapped array (cudaArray_t, CUarray, ...): apart from
 * every address and handle. A release of the array's handle as an address (cudaFree of an
 * array) finds it too, as a mismatched release. */
uintptr_t check_array_key(uintptr_t array);
/* Registry key of a cuMemAddressReserve range at base: apart from the mappings inside it. */
uintptr_t check_reserve_key(uintptr_t base);

/* What check_release_begin decided. */
enum { CHECK_GO, CHECK_REPORTED, CHECK_IGNORED, CHECK_UNKNOWN };
/* A release call is about to run on p; kind_mask (1u << gpumem kind) is what it can release.
 * CHECK_GO: p is a live allocation of a right kind, now taken out of the registry; call
 * check_release_end when the call returned. CHECK_REPORTED: a finding was made (mismatched,
 * double or interior release); the registry is unchanged. CHECK_IGNORED: p is NULL, which
 * every release call accepts. CHECK_UNKNOWN: no allocation gpumem check saw; call
 * check_release_unknown_end when the call returned, which reports an invalid release only if
 * CUDA refused it too (memory from calls gpumem check does not watch, such as a graph's
 * memory nodes, is released without a false report). */
int check_release_begin(const char *call, unsigned kind_mask, uintptr_t p, uint32_t stack);
/* The release call of a CHECK_GO returned; unless it succeeded, p is live again. */
void check_release_end(uintptr_t p, int succeeded);
/* The release call of a CHECK_UNKNOWN returned: an invalid-free finding unless it succeeded. */
void check_release_unknown_end(const char *call, uintptr_t p, uint32_t stack, int succeeded);

/* A release CUDA makes by itself (a graph relaunched with cudaGraphInstantiateFlagAutoFreeOnLaunch
 * frees what its last launch allocated): p, if it is a live allocation of a kind in kind_mask,
 * leaves the registry as released by call at stack. No finding either way. Returns 1 when p
 * was released. */
int check_release_if_live(const char *call, unsigned kind_mask, uintptr_t p, uint32_t stack);

/* cuMemUnmap of [p, p + bytes) succeeded: every other mapping inside the range is gone too
 * (the one at p went through check_release_begin). */
void check_unmap_rest(uintptr_t p, size_t bytes);

/* A host release (free, operator delete) of p. Returns 0 when p is no CUDA memory (the caller
 * releases it as usual). Otherwise a mismatched-release finding was made, p left the registry,
 * and the return value is the gpumem kind of the memory: the caller releases it with the
 * matching CUDA call (check_tls_busy set). Cheap when no host-visible CUDA memory is live. */
int check_host_free(const char *call, uintptr_t p, uint32_t stack);

/* realloc's first look: the gpumem kind of the live host-visible CUDA allocation p lies in,
 * with its base and size, or 0 (as cheap as check_host_free for anything else). Nothing is
 * reported or changed: the caller copies the contents, then calls check_host_free. */
int check_host_lookup(uintptr_t p, uintptr_t *base, size_t *bytes);

/* cudaDeviceReset or the destruction of a device's context: its allocations are gone. */
void check_device_reset(int device);

/* CUDA started in this process: its status file says so until its report replaces it, so that
 * `gpumem check` can name a process that ended without a report (SIGKILL). */
void check_started(void);

/* This process is a child forked from a checked one, which will not exec: its copy of the
 * parent's registry is not its own, so it writes no report (CUDA does not work after fork). */
void check_forked(void);

/* This process runs unchecked (another CUPTI subscriber); why says so in a sentence. */
void check_unchecked(const char *why);

/* Ends: writes the report (findings so far, leaks, peaks, summary) and the JSON and status
 * files. status: "exited" with the exit code in code, or "signaled" with the signal in code.
 * Runs once; later calls do nothing. */
void check_finish(const char *status, int code);

/* Leak kinds, valgrind's names: "definite", "reachable", "all", "none", comma-separated
 * ("possible" and "indirect" are accepted and never found). Returns the set as bits (1
 * definite, 2 reachable), or -1 for a word it does not know. */
int check_leak_kinds_parse(const char *list);
/* "definite" (1) or "reachable" (2); NULL otherwise. */
const char *check_leak_kind_name(int leak_kind);

/* The program's main returned; frame is the address of the frame it returned to. The leak
 * scan reads the exiting thread's stack from there up: main's own frame is dead. */
void check_main_returned(uintptr_t frame);

/* Errors reported so far (not suppressed), for tests. */
long check_error_count(void);

#endif
