/* The registration cache: not yet. */
#include "internal.h"

int gpumem__regcache_get(const void *p, size_t bytes, void **entry)
{
    (void)p;
    (void)bytes;
    *entry = NULL;
    return 0;
}
void gpumem__regcache_put(void *entry)
{
    (void)entry;
}
int gpumem__regcache_owns(const void *p)
{
    (void)p;
    return 0;
}
void gpumem__regcache_release(const void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
}
int gpumem__regcache_set_enabled(int on)
{
    (void)on;
    return 0;
}
void gpumem__regcache_reset(void)
{
}
