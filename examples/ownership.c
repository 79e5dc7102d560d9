/* Ownership in C (docs/ownership.md): memory released when the block that owns it ends, on
 * every path, with no release call written by hand.
 *
 * Runs on a GPU or on the simulated device (GPUMEM_BACKEND=sim). Needs the cleanup attribute
 * (GCC, Clang); elsewhere use GPUMEM_SCOPE_MANUAL and gpumem_scope_close, as the docs show. */
#include <stdio.h>

#include <gpumem.h>

#if !GPUMEM_HAVE_CLEANUP
#error "this example needs the cleanup attribute (GCC or Clang)"
#endif

static void fill(float *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h[i] = (float)i; /* write-combined: the host writes, never reads */
}

/* The seed's example: three buffers, one scope. */
static int run(size_t n, int fail_half_way)
{
    GPUMEM_SCOPE(s); /* everything adopted is released at the closing brace */
    float *d_in = gpumem_adopt(s, gpumem_device_alloc(n, sizeof *d_in));
    float *d_out = gpumem_adopt(s, gpumem_device_alloc(n, sizeof *d_out));
    float *h_buf = gpumem_adopt(s, gpumem_host_alloc(n, sizeof *h_buf, GPUMEM_HOST_WRITE_COMBINED));
    if (!d_in || !d_out || !h_buf)
        return gpumem_last_error()->code; /* the scope still releases what exists */

    fill(h_buf, n);
    if (fail_half_way)
        return 1; /* a later step failed: all three are released here */
    /* In a program with the CUDA runtime: cudaMemcpy(d_in, h_buf, ...), a kernel from a .cu
     * file, GPUMEM_CHECK_LAUNCH() and GPUMEM_CHECK(cudaDeviceSynchronize()). */
    return 0;
}

/* A buffer for the caller: owned by this block until it is ready, then handed on. */
static float *make_staging(size_t n)
{
    GPUMEM_AUTO float *h = gpumem_pinned_alloc(n, sizeof *h);
    if (!h)
        return NULL;
    fill(h, n); /* any early return up to here releases h */
    return gpumem_steal(&h); /* the caller owns it now; h is NULL at the closing brace */
}

static unsigned long long live(void)
{
    gpumem_live l;
    gpumem_live_get(&l);
    return (unsigned long long)l.count[0];
}

static void print_error(const gpumem_error *err, void *arg)
{
    (void)arg;
    fprintf(stderr, "%s\n", err->message);
}

int main(void)
{
    gpumem_set_error_handler(print_error, NULL);
    if (gpumem_init() != GPUMEM_OK)
        return 1;
    printf("gpumem %s on the %s backend\n", gpumem_version(), gpumem_backend());

    int rc = run(1 << 20, 0);
    printf("run: %s, still live: %llu\n", gpumem_err_name(rc), live());
    rc = run(1 << 20, 1);
    printf("run failing half-way: returned %d, still live: %llu\n", rc, live());
    rc = run((size_t)1 << 40, 0); /* 4 TiB: more than any device has */
    printf("run too big: %s, still live: %llu\n", gpumem_err_name(rc), live());

    float *staging = make_staging(4096);
    printf("make_staging: %s, still live: %llu\n", staging ? "handed on" : "failed", live());
    {
        GPUMEM_SCOPE(s);
        gpumem_adopt(s, staging); /* a new owner */
    }
    printf("after its new owner's block: still live: %llu\n", live());
    return live() == 0 ? 0 : 1;
}
