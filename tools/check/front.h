/* What gpumem check's two front ends (cupti.c, preload.c) share. Only in libgpumem_check.so. */
#ifndef GPUMEM_CHECK_FRONT_H
#define GPUMEM_CHECK_FRONT_H

/* Called by preload.c's constructor: every process the checked program starts loads the
 * library; the ones that use CUDA get InitializeInjection too. */
void check_front_preloaded(void);

/* Releases p, host memory of a gpumem kind that free()/delete was handed, with the CUDA driver
 * call that matches it (registered memory is unregistered, then given to pass_free). */
void check_front_release(int kind, void *p, void (*pass_free)(void *));

#endif
