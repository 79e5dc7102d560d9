// Stacks of CUDA runtime calls in optimized C++ (src/backtrace.c with libdw). A .cu file is
// C++, where cuda_runtime.h's `cudaMalloc(&p, n)` with a typed pointer is the header's inline
// template cudaMalloc<T>, which calls the runtime's cudaMalloc(void **, size_t). At -O2 the
// template is inlined into the caller, so the caller's return address lies in code whose line
// is cuda_runtime.h's: the whole frame used to be taken for CUDA's and trimmed, leaving an empty
// stack. Built -O2 -g; the runtime's cudaMalloc is stood in for by a function without debug
// info in this executable (fake_cudart.c), as the static runtime is, which captures the stack
// as gpumem check's CUPTI callback does inside the call.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

extern "C" {
#include "backtrace.h"
extern uint32_t fake_cudart_stack;
}
#include "harness.h"

static int line_call;
static int unexpected_rc; // the stand-in (fake_cudart.c) answers 256 bytes with out of memory

__attribute__((noinline)) static void leak_helper(float **p)
{
    line_call = __LINE__; if (cudaMalloc(p, 256) != cudaErrorMemoryAllocation) unexpected_rc = 1;
    __asm__ volatile("" ::: "memory");
}

int main()
{
    if (!strstr(gpumem__stack_backend(), "libdw")) {
        fprintf(stderr, "SKIP: built without libdw (%s)\n", gpumem__stack_backend());
        return 77;
    }
    float *p = nullptr;
    leak_helper(&p);
    EXPECT_EQ(unexpected_rc, 0);
    EXPECT_NE(fake_cudart_stack, 0);
    gpumem__frame f[GPUMEM__STACK_MAX_FRAMES];
    int n = gpumem__stack_frames(fake_cudart_stack, f, GPUMEM__STACK_MAX_FRAMES);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "  frame %d: %s %s:%d%s\n", i, f[i].func, f[i].file ? f[i].file : "-",
                f[i].line, f[i].inlined ? " (inlined)" : "");
    // leak_helper at the line of the call, main; the runtime and the header's template gone.
    EXPECT_EQ(n, 2);
    if (n == 2) {
        EXPECT_TRUE(strstr(f[0].func, "leak_helper") != NULL); /* a clone: .constprop */
        EXPECT_TRUE(f[0].file && strstr(f[0].file, "test_backtrace_cudart.cpp"));
        EXPECT_EQ(f[0].line, line_call);
        EXPECT_EQ(f[0].inlined, 0);
        EXPECT_STR_EQ(f[1].func, "main");
    }
    return harness_exit();
}
