/* The gpumem way, as in docs/EXPERIENCE.md. No findings expected. */
#include <gpumem.h>

void fill(float *h, size_t n);
void launch_scale(float *in, float *out, size_t n);

int run(size_t n)
{
    GPUMEM_SCOPE(s);
    float *d_in  = gpumem_adopt(s, gpumem_device_alloc(n, sizeof *d_in));
    float *d_out = gpumem_adopt(s, gpumem_device_alloc(n, sizeof *d_out));
    float *h_buf = gpumem_adopt(s, gpumem_host_alloc(n, sizeof *h_buf, GPUMEM_HOST_WRITE_COMBINED));
    if (!d_in || !d_out || !h_buf)
        return gpumem_last_error()->code;

    fill(h_buf, n);
    GPUMEM_CHECK(cudaMemcpy(d_in, h_buf, n * sizeof *h_buf, cudaMemcpyHostToDevice));
    launch_scale(d_in, d_out, n);
    GPUMEM_CHECK_LAUNCH();
    GPUMEM_CHECK(cudaDeviceSynchronize());
    return 0;
}

int run_manual(size_t n)
{
    float *d = gpumem_device_alloc(n, sizeof *d);
    if (!d)
        return -1;
    float *h = gpumem_pinned_alloc(n, sizeof *h);
    if (!h) {
        gpumem_free(d);
        return -1;
    }
    fill(h, n);
    int rc = GPUMEM_CHECK(cudaMemcpy(d, h, n * sizeof *h, cudaMemcpyHostToDevice));
    gpumem_free(h);
    gpumem_free(d);
    return rc;
}
