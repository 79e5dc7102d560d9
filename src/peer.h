/* The backend's own peer calls, for `gpumem bench` (tools/bench/devices.c): what CUDA alone does
 * between two devices, without gpumem's registry or its staged path, on the real device and on
 * the simulated one alike (a tool cannot reach the backend table otherwise: only src/cuda/
 * calls CUDA). Each starts gpumem when it has not started, and returns 0, a cudaError_t value
 * (positive) as the backend gave it, or GPUMEM_ENODEV when gpumem cannot start. Thread-safe. */
#ifndef GPUMEM_PEER_H
#define GPUMEM_PEER_H

#include <stddef.h>

/* cudaDeviceEnablePeerAccess (enable 1) or cudaDeviceDisablePeerAccess (0): device's direct
 * access to peer's memory, whatever device is current. */
int gpumem__peer_access(int device, int peer, int enable);
/* cudaMemcpyPeer: bytes from src (device src_device's memory) to dst (dst_device's), on the
 * current device's default stream, returning once the copy is done. */
int gpumem__peer_copy(void *dst, int dst_device, const void *src, int src_device, size_t bytes);

#endif
