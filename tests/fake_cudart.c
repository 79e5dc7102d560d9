/* Stands for the static CUDA runtime's cudaMalloc in test_backtrace_cudart: linked into the
 * executable, built without debug info, and capturing the stack as gpumem check's CUPTI
 * callback does inside the runtime call. */
#include <stddef.h>
#include <stdint.h>

#include "backtrace.h"

uint32_t fake_cudart_stack;
int cudaMalloc(void **p, size_t n);

__attribute__((noinline)) int cudaMalloc(void **p, size_t n)
{
    fake_cudart_stack = gpumem__stack_capture(0);
    *p = NULL;
    __asm__ volatile("" ::: "memory");
    return n ? 2 : 0;
}
