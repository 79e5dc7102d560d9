/* gpumem check --trace=PATH: the checked process's allocations and releases over time, in the
 * library's trace format (src/trace.h), fed by the engine's events. */
#ifndef GPUMEM_CHECK_TRACE_H
#define GPUMEM_CHECK_TRACE_H

/* Opens the trace that GPUMEM_CHECK_TRACE names (set by `gpumem check --trace`), if any; a
 * child of the checked program (pid other than GPUMEM_CHECK_ROOT) writes PATH.PID unless the
 * path has %p. Called once by the engine's setup, before the library's own options are read,
 * so that a GPUMEM_TRACE meant for the program's own gpumem is not opened here too.
 * writer_started runs first on the trace's writer thread (the engine marks the thread its own
 * there, so that what the writer does is not watched). */
void check_trace_setup(void (*writer_started)(void));

#endif
