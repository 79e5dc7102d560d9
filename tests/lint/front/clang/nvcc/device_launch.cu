// A kernel that launches a kernel (dynamic parallelism) needs relocatable device code.
__global__ void child(int *a) { a[threadIdx.x] = 1; }
__global__ void parent(int *a) { child<<<1, 32>>>(a); }

int main(void)
{
    int *a = nullptr;
    if (cudaMalloc(&a, 32 * sizeof(int)) != cudaSuccess)
        return 1;
    parent<<<1, 1>>>(a);
    int rc = cudaDeviceSynchronize() != cudaSuccess;
    return cudaFree(a) != cudaSuccess || rc;
}
