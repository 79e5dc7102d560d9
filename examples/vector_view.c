/* vector_view: a wrong float4 view caught before the kernel runs.
 *
 * The seed's mistake is `reinterpret_cast<float4 *>(d_ptr + 1)`: 4 bytes off, and the kernel
 * that loads through it dies with cudaErrorMisalignedAddress, a sticky error that takes the
 * whole CUDA context with it and names no line. GPUMEM_VEC makes the same view on the host,
 * checks it, and refuses it with a message naming the allocation, the offset and the width,
 * while the context is still healthy; the corrected view then goes to the kernel.
 *
 * Uses the GPU when there is one and the simulated device otherwise (this file is C: the
 * kernel launch is shown as a comment; tests/gpu/align_kernel.cu launches a real one).
 * Exit status 0 when the wrong view was refused and the right one accepted. */
#include <stdio.h>
#include <string.h>

#include <gpumem.h>

static void print_error(const gpumem_error *e, void *arg)
{
    (void)arg;
    printf("%s\n", e->message);
}

/* In a .cu file: sum4<<<blocks, 256>>>(view, n4, out); where sum4 loads view[i]. */
static int launch_sum4(const float4 *view, size_t n4)
{
    printf("launching sum4 over %zu float4 at %p\n", n4, (const void *)view);
    return 0;
}

int main(void)
{
    gpumem_set_error_handler(print_error, NULL);
    if (gpumem_init() != GPUMEM_OK) {
        printf("no GPU usable here; using the simulated device\n\n");
        gpumem_backend_select("sim");
    }
    const size_t n = 1 << 18; /* 1.0 MiB of floats */
    float *d_ptr = gpumem_device_alloc(n, sizeof *d_ptr);
    if (!d_ptr)
        return 1;

    /* Wrong: one float (4 bytes) in, seen as float4 (16 bytes wide). */
    printf("GPUMEM_VEC(float4, d_ptr, 1):\n");
    float4 *bad = GPUMEM_VEC(float4, d_ptr, 1);
    int refused = bad == NULL && gpumem_last_error()->code == GPUMEM_EMISALIGNED;
    if (bad)
        launch_sum4(bad, (n - 1) / 4); /* not reached: the view was refused */
    printf("-> %s: the kernel was not launched\n\n", gpumem_err_name(gpumem_last_error()->code));

    /* Right: four floats in, a whole float4 further. */
    printf("GPUMEM_VEC(float4, d_ptr, 4):\n");
    float4 *good = GPUMEM_VEC(float4, d_ptr, 4);
    int accepted = good != NULL;
    if (good)
        launch_sum4(good, (n - 4) / 4);

    /* What the address is, for a debugger session or a log. */
    printf("\n");
    gpumem_describe(d_ptr + 1, stdout);

    gpumem_free(d_ptr);
    return refused && accepted ? 0 : 1;
}
