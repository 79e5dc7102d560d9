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
    CHECK_FAILED_CALL,
    CHECK_KIND_COUNT
} check_kind;

/* The memory kinds CUDA's call releases, as bits (1u << gpumem kind): src/kinds.def's. 0 for a
 * call that releases none. */
unsigned check_release_kinds(const char *call);
/* The call that releases memory of kind made by made_by (the record's call), in made_by's API:
 * what a report tells the program to use. */
const char *check_right_release(int kind, const char *made_by);

/* "leak", "mismatched-release", "double-free", "invalid-free", "interior-free",
 * "failed-alloc", "failed-call"; NULL for a bad value. */
const char *check_kind_name(int kind);
/* The kind named so, or -1. */
int check_kind_from_name(const char *name);

/* Reads the GPUMEM_CHECK_* variables `gpumem check` sets (settings.def) and sets up the
 * registry. Idempotent. The first output (a finding, or the report at the end) opens the log. */
void check_setup(void);

/* Set on a thread while gpumem check itself calls CUDA or the allocator, so that the front
 * ends let those calls through unobserved. Initial-exec: touching it never allocates. */
extern _Thread_local int check_tls_busy __attribute__((tls_model("initial-exec")));
/* How many findings the calling thread has reported: a front end compares it before and after
 * a CUDA call to tell whether the call made one. */
extern _Thread_local unsigned check_tls_reports __attribute__((tls_model("initial-exec")));

/* An allocation call returned. cuda_error 0: [base, base + bytes) of the given gpumem kind is
 * live now (for virtual memory handles, base is check_handle_key(handle)). Otherwise the call
 * failed with that CUDA error: a failed-alloc finding. stack: gpumem__stack_capture() id. */
void check_alloc(const char *call, int kind, uintptr_t base, size_t bytes, int device,
                 int cuda_error, uint32_t stack);

/* ---- failed calls (calls.c) ---- */
/* --failed-calls: failures are errors (the default), notes (shown, not counted) or not
 * watched. */
enum { CHECK_CALLS_ERROR, CHECK_CALLS_NOTE, CHECK_CALLS_NO };
int check_failed_calls_mode(void);
/* --watch-calls=all: the failures of the calls frameworks make for every operation are watched
 * too (launches through the driver API, the current context, stream and event queries); the
 * default, most, leaves them out, as each watched call costs. */
int check_watch_all_calls(void);
/* Whether call's failure with status is the documented answer of a query (probes.def). call is
 * the program's name for it ("cuMemAlloc", not "cuMemAlloc_v2"). */
int check_call_probe(const char *call, int status);
/* A failure the front end judged a probe itself (cuMemCreate refused for a handle type): on
 * record in the JSON report's "probes", as the table's probes are. */
void check_call_probed(const char *call, int status);
/* A CUDA call (its name as CUPTI gives it: suffixes such as _v2 are dropped) returned status,
 * named status_name ("cudaErrorInvalidValue", "CUDA_ERROR_NOT_PERMITTED") and described by
 * status_text (both static strings, or NULL); stack 0: the caller's, captured here. Unless it
 * is a probe: a failed-call finding,
 * reported at the first failure of its call, status and stack, counted at the others. */
void check_call_failed(const char *call, int status, const char *status_name,
                       const char *status_text, uint32_t stack);

/* GPUMEM_CHECK_COUNT_CALLS=1: whether calls are counted (check_call_seen), and a call that
 * came through the front end's callbacks: domain 0 the runtime API, 1 the driver API; id its
 * number in that domain (below 2048, others are not counted), name its name (static). The
 * report's end lists the most frequent. */
int check_count_calls(void);
void check_call_seen(int domain, unsigned id, const char *name);

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

/* A host release (free, operator delete) of p. Returns 0 when p is no CUDA memory (the caller
 * releases it as usual). Otherwise a mismatched-release finding was made, p left the registry,
 * and the return value is the gpumem kind of the memory: the caller releases it with the
 * matching CUDA call (check_tls_busy set). Cheap when no host-visible CUDA memory is live. */
int check_host_free(const char *call, uintptr_t p, uint32_t stack);

/* realloc's first look: the gpumem kind of the live host-visible CUDA allocation p lies in,
 * with its base and size, or 0 (as cheap as check_host_free for anything else). Nothing is
 * reported or changed: the caller copies the contents, then calls check_host_free. */
int check_host_lookup(uintptr_t p, uintptr_t *base, size_t *bytes);

/* cudaDeviceReset, cuDevicePrimaryCtxReset or cuCtxDestroy (call) of a device's context
 * returned: each allocation of the device still live is reported as a leak at that moment
 * (with its allocation stack and stack, the reset's), then it is gone with the context.
 * Registered host memory is the program's own and stays. */
void check_device_reset(const char *call, int device, uint32_t stack);

/* ---- virtual memory (vmm.c): handles with references, mappings that hold them ----
 * A handle (cuMemCreate, cuMemImportFromShareableHandle, cuMulticastCreate) starts with one
 * reference; its physical memory is live while a reference or a mapping (or a multicast
 * binding) holds it. Its registry record (kind virtual, key check_handle_key) is what leaks
 * and what the statistics count; mappings are not memory of their own. */
/* call returned handle for bytes of physical memory (0 when not known: an import, whose size
 * the first mapping gives). An import of a handle held already is one more reference to it. */
void check_vmm_handle(const char *call, unsigned long long handle, size_t bytes, int device,
                      uint32_t stack);
/* cuMemRetainAllocationHandle returned handle: one more reference. */
void check_vmm_retain(unsigned long long handle);
/* cuMemRelease(handle) is about to run. CHECK_GO: a reference was taken; call
 * check_vmm_release_end when it returned. CHECK_REPORTED: no reference was left (a double
 * release, reported). CHECK_UNKNOWN: a handle never seen: call check_release_unknown_end. */
int check_vmm_release_begin(const char *call, unsigned long long handle, uint32_t stack);
/* The release of a CHECK_GO returned: the memory goes when nothing holds it any more. */
void check_vmm_release_end(const char *call, unsigned long long handle, int succeeded,
                           uint32_t stack);
/* cuMemMap(base, bytes, offset, handle) succeeded: the mapping holds the handle's memory. */
void check_vmm_map(uintptr_t base, size_t bytes, unsigned long long handle, uint32_t stack);
/* cuMemUnmap(base, bytes) is about to run: CHECK_GO when a mapping starts in the range
 * (call check_vmm_unmap_end when it succeeded), else CHECK_UNKNOWN. */
int check_vmm_unmap_begin(uintptr_t base, size_t bytes);
/* cuMemUnmap succeeded: every mapping that starts in the range is gone, and with it the
 * memory nothing else holds (released by call at stack). */
void check_vmm_unmap_end(const char *call, uintptr_t base, size_t bytes, uint32_t stack);
/* cuMulticastBindMem: multicast object mc's [mc_offset, +bytes) holds handle mem's memory.
 * cuMulticastBindAddr: the same for the memory mapped at addr. cuMulticastUnbind: the
 * bindings that start in the range go. */
void check_vmm_bind(unsigned long long mc, size_t mc_offset, size_t bytes, unsigned long long mem);
void check_vmm_bind_addr(unsigned long long mc, size_t mc_offset, size_t bytes, uintptr_t addr);
void check_vmm_unbind(unsigned long long mc, size_t mc_offset, size_t bytes, uint32_t stack);
/* The device's context is gone: its handles, mappings and bindings with it. */
void check_vmm_device_reset(int device);
/* Whether handle's references are all released while a mapping still holds its memory. */
int check_vmm_release_held(unsigned long long handle);

/* CUDA started in this process: its status file says so until its report replaces it, so that
 * `gpumem check` can name a process that ended without a report (SIGKILL). */
void check_started(void);

/* This process is a child forked from a checked one, which will not exec: its copy of the
 * parent's registry is not its own, so it writes no report (CUDA does not work after fork). */
void check_forked(void);

/* "GPUMEM_CHECK_IMAGE=N": what the program an exec starts after check_finish("exec") must
 * find in its environment, so that its files do not replace this one's (a static string). */
const char *check_exec_env(void);
/* An exec after check_finish("exec") failed: the process goes on, and check_finish will write
 * its report again at its end. */
void check_exec_failed(void);

/* This process runs unchecked (another CUPTI subscriber); why says so in a sentence. */
void check_unchecked(const char *why);

/* Ends: writes the report (findings so far, leaks, peaks, summary) and the JSON and status
 * files. status: "exited" with the exit code in code; "signaled" with the signal in code (the
 * report is made async-signal-safely); "_exit" with the exit code (the same, as _exit may be
 * called in a signal handler); "exec" when the process replaces its program (the memory goes
 * with it). Runs once; later calls do nothing. */
void check_finish(const char *status, int code);

/* Leak kinds, valgrind's names: "definite", "reachable", "all", "none", comma-separated
 * ("possible" and "indirect" are accepted and never found). Returns the set as bits (1
 * definite, 2 reachable), or -1 for a word it does not know. */
int check_leak_kinds_parse(const char *list);
/* "definite" (1) or "reachable" (2); NULL otherwise. */
const char *check_leak_kind_name(int leak_kind);

/* The program's main is about to be called from frame, the frame of the start code's last
 * function. The leak scan reads no stack at or above it: what lies there is the start code's
 * (its saved registers hold values left before main, such as the upper half of libc's address)
 * and the process's arguments, environment and auxiliary vector, never a pointer of the
 * program's. */
void check_main_entered(uintptr_t frame);

/* The program's main returned; frame is the address of the frame it returned to. The leak
 * scan reads the exiting thread's stack from there up: main's own frame is dead. */
void check_main_returned(uintptr_t frame);

/* Errors reported so far (not suppressed), for tests. */
long check_error_count(void);

#endif
