/* What gpumem check's two front ends (cupti.c, preload.c) share. Only in libgpumem_check.so. */
#ifndef GPUMEM_CHECK_FRONT_H
#define GPUMEM_CHECK_FRONT_H

/* Called by preload.c's constructor: every process the checked program starts loads the
 * library; the ones that use CUDA get InitializeInjection too. */
void check_front_preloaded(void);

/* Releases p, host memory of a gpumem kind that free()/delete was handed, with the CUDA driver
 * call that matches it (registered memory is unregistered, then given to pass_free). */
void check_front_release(int kind, void *p, void (*pass_free)(void *));

/* The process ends without exit handlers (how "_exit", code its status) or replaces its program
 * (how "exec"): if it used CUDA, its report is written now. Returns 1 when it was (and, for
 * "exec", the next program's variables must say so: check_exec_env), else 0. */
int check_front_ending(const char *how, int code);

/* The exec failed: the process goes on, and its report will be written again at its end. */
void check_front_exec_failed(void);

#endif
