/* Allocation stacks: capture, deduplication and symbolization (internal, gpumem__ prefix).
 *
 * A stack is captured as return addresses only (cheap), deduplicated in a global table and
 * named by a small id that fits in a registry record. Names, files and lines are looked up
 * only when a report needs them, once per stack, and cached. See docs/backtraces.md. */
#ifndef GPUMEM_BACKTRACE_H
#define GPUMEM_BACKTRACE_H

#include <stdint.h>
#include <stdio.h>

/** Most frames kept per stack: the innermost ones when the stack is deeper. */
#define GPUMEM__STACK_MAX_FRAMES 64

/** One symbolized frame. Every string is owned by the stack module and stays valid until the
 *  process ends (also at exit, also after the object it came from was unloaded). */
typedef struct {
    const char *func;   /**< function name; "???" when unknown (never NULL) */
    const char *file;   /**< source file as recorded in the debug info; NULL when unknown */
    int line;           /**< source line; 0 when unknown */
    uintptr_t pc;       /**< the captured return address (the call is just before it) */
    const char *object; /**< path of the executable or shared object; NULL when unknown */
    unsigned char inlined; /**< inlined into the next frame (same pc; libdw builds only) */
} gpumem__frame;

/**
 * Captures the calling thread's stack, deduplicates it and returns its id.
 *
 * @param skip innermost frames to leave out besides this function's own (the caller's frames
 *             inside gpumem). Frames that are gpumem's are also trimmed when the stack is
 *             symbolized, so a skip that is too small costs only a little capture time.
 * @return the stack's id (> 0; the same stack always gets the same id in one process), or 0
 *         when capture is unavailable on this platform or failed (out of memory).
 *
 * Thread-safe and lock-free. For a stack already seen it neither allocates nor takes a lock;
 * a new stack costs one malloc. Never calls CUDA. At most GPUMEM__STACK_MAX_FRAMES frames are
 * kept (the innermost).
 */
uint32_t gpumem__stack_capture(int skip);

/**
 * Writes the frames of stack @p id into @p out, innermost first, at most @p max.
 *
 * Symbolizes on the first call for that id (with libdw when gpumem was built with it: names,
 * files and lines; otherwise dladdr: names of exported symbols only) and caches the result.
 * Left out: gpumem's own frames (functions named gpumem_* / gpumem__*, code from gpumem's
 * src/, and the innermost run of frames up to the last of those), the CUDA runtime's and
 * driver's frames (in libcudart* / libcuda*, and cuda* / cu* functions without line
 * information, as the static runtime's), and the frames below main (libc's start code; for
 * other threads, start_thread and clone).
 *
 * Thread-safe (symbolization is serialized); never calls CUDA; safe at process exit.
 * @return the number of frames written; 0 for id 0 or an unknown id.
 */
int gpumem__stack_frames(uint32_t id, gpumem__frame *out, int max);

/**
 * As gpumem__stack_frames, but only for a stack already symbolized: returns -1 for one that is
 * not (id 0: 0). Takes no lock and never allocates, so it is async-signal-safe.
 */
int gpumem__stack_frames_cached(uint32_t id, gpumem__frame *out, int max);

/**
 * Prints stack @p id valgrind-style, one frame a line, each prefixed by @p indent:
 * "at func (file:line)" for the innermost, "by func (file:line)" for the others; a frame
 * without a line reads "by func (in object)". A function inlined into its caller ends its line
 * with ", inlined into:" and its caller follows, as a frame of its own. A file under the current directory is shown
 * relative to it. Prints nothing for id 0. Same guarantees as gpumem__stack_frames.
 */
void gpumem__stack_print(uint32_t id, FILE *out, const char *indent);

/**
 * The symbol that holds @p addr (a global or static variable, or a function) and, in
 * @p object, the path of the executable or shared object it is in (NULL when unknown).
 *
 * From the symbol table with libdw (static variables too), else from the dynamic symbol table
 * (dladdr: exported names only); a symbol holds addr only when addr lies inside its size. C++
 * names are demangled. Strings as gpumem__stack_frames's. Thread-safe; safe at exit.
 * @return the name, or NULL when no symbol holds addr.
 */
const char *gpumem__symbol_of(uintptr_t addr, const char **object);

/**
 * What this build captures and symbolizes with, e.g. "libunwind, libdw (file:line)" or
 * "backtrace(), dladdr (names only)", or "unavailable"; for `gpumem info` and tests.
 */
const char *gpumem__stack_backend(void);

#endif
