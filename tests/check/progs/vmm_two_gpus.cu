// expect-gpus: 2
// expect: leak cuMemCreate virtual bytes=4194304 device=0 at=make_buffer@create,main@leaked
//
// One process driving two GPUs the way NCCL's peer-to-peer transport does with its VMM
// buffers (NCCL_CUMEM_ENABLE=1, nccl-tests -g 2): device 0 makes a buffer (cuMemCreate,
// cuMemAddressReserve, cuMemMap, cuMemSetAccess) and takes one more reference for its peer
// (cuMemRetainAllocationHandle); device 1 maps the same handle in a range of its own, gets
// access to it (cuMemSetAccess for device 1: access, not memory) and releases the handle at
// once; a kernel on device 1 writes through its mapping, device 0 reads it back. At the end
// the peer unmaps its range and the owner frees its buffer as ncclCuMemFree does (retain,
// release, unmap, release): clean. A second buffer goes the same way but its owner forgets the
// last cuMemRelease: its 4 MiB of device 0's memory leak (its address ranges are freed).
#include "check_prog.h"

__global__ void fill(int *p, size_t n, int v)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

static void give_access(CUdeviceptr p, size_t bytes, int device)
{
    CUmemAccessDesc access = {};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(cuMemSetAccess(p, bytes, &access, 1));
}

// Device 0's buffer, mapped for device 0, with one reference kept for the peer that maps it.
__attribute__((noinline)) static CUdeviceptr make_buffer(size_t bytes, CUmemGenericAllocationHandle *h)
{
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUdeviceptr p = 0;
    CHECK(cudaSetDevice(0));
    CHECK_CU(cuMemCreate(h, bytes, &prop, 0)); // @create
    CHECK_CU(cuMemAddressReserve(&p, bytes, 0, 0, 0));
    CHECK_CU(cuMemMap(p, bytes, 0, *h, 0));
    give_access(p, bytes, 0);
    CUmemGenericAllocationHandle again;
    CHECK_CU(cuMemRetainAllocationHandle(&again, (void *)p));
    return p;
}

// The peer's side: the same handle mapped in a range of device 1's, then released.
static CUdeviceptr peer_map(CUmemGenericAllocationHandle h, size_t bytes, int peer)
{
    CUdeviceptr p = 0;
    CHECK(cudaSetDevice(peer));
    CHECK_CU(cuMemAddressReserve(&p, bytes, 0, 0, 0));
    CHECK_CU(cuMemMap(p, bytes, 0, h, 0));
    give_access(p, bytes, peer);
    CHECK_CU(cuMemRelease(h));
    return p;
}

// A kernel on the peer writes device 0's memory through the peer's mapping; device 0 reads it.
static int use(CUdeviceptr owner, CUdeviceptr mapped, size_t bytes, int peer, int v)
{
    size_t n = bytes / sizeof(int);
    CHECK(cudaSetDevice(peer));
    fill<<<(unsigned)((n + 255) / 256), 256>>>((int *)mapped, n, v);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaSetDevice(0));
    int last = 0;
    CHECK(cudaMemcpy(&last, (int *)owner + n - 1, sizeof last, cudaMemcpyDeviceToHost));
    return last == v;
}

static void peer_unmap(CUdeviceptr p, size_t bytes)
{
    CHECK_CU(cuMemUnmap(p, bytes));
    CHECK_CU(cuMemAddressFree(p, bytes));
}

// ncclCuMemFree; forget_last leaves out its last cuMemRelease.
static void owner_free(CUdeviceptr p, size_t bytes, int forget_last)
{
    CUmemGenericAllocationHandle h;
    CHECK(cudaSetDevice(0));
    CHECK_CU(cuMemRetainAllocationHandle(&h, (void *)p));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemUnmap(p, bytes));
    if (!forget_last)
        CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemAddressFree(p, bytes));
}

int main(void)
{
    prog_init();
    CHECK_CU(cuInit(0));
    int can = 0;
    CHECK(cudaDeviceCanAccessPeer(&can, 1, 0));
    // Without a link between them, device 0 stands in for its peer: the calls are the same.
    int peer = can ? 1 : 0;
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CHECK_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    const size_t bytes = (4u << 20) > gran ? ((4u << 20) + gran - 1) / gran * gran : gran;

    CUmemGenericAllocationHandle h;
    CUdeviceptr a = make_buffer(bytes, &h);
    CUdeviceptr a_peer = peer_map(h, bytes, peer);
    int ok = use(a, a_peer, bytes, peer, 7);
    peer_unmap(a_peer, bytes);
    owner_free(a, bytes, 0);

    CUdeviceptr b = make_buffer(bytes, &h); // @leaked
    CUdeviceptr b_peer = peer_map(h, bytes, peer);
    ok = use(b, b_peer, bytes, peer, 9) && ok;
    peer_unmap(b_peer, bytes);
    owner_free(b, bytes, 1);
    if (!ok) {
        fprintf(stderr, "vmm_two_gpus: device 0 did not read what device %d wrote\n", peer);
        return 1;
    }
    printf("vmm_two_gpus: device %d wrote device 0's memory through its own mapping\n", peer);
    prog_done("vmm_two_gpus");
    return 0;
}
