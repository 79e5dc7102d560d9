/* The backend's peer calls for gpumem bench (peer.h). gpumem's own copies between devices are
 * in copy.c; these are the raw calls they are measured against. */
#include "peer.h"

#include "internal.h"

int gpumem__peer_access(int device, int peer, int enable)
{
    int rc = gpumem__ready("gpumem__peer_access", (gpumem_site){NULL, NULL, 0});
    return rc != GPUMEM_OK ? rc : gpumem__be->peer_access(device, peer, enable);
}

int gpumem__peer_copy(void *dst, int dst_device, const void *src, int src_device, size_t bytes)
{
    int rc = gpumem__ready("gpumem__peer_copy", (gpumem_site){NULL, NULL, 0});
    if (rc != GPUMEM_OK)
        return rc;
    int err = gpumem__be->memcpy_peer_async(dst, dst_device, src, src_device, bytes, NULL);
    return err ? err : gpumem__be->stream_sync(NULL);
}
