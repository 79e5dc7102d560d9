/* Where CUDA's virtual memory is mapped (cuMemMap): address ranges, each with the handle whose
 * memory it maps and the stack of the call that mapped it. vmm.c keeps them as a handle's
 * holds; a release of an address (events.c) asks here whether it lies in a mapping (cudaFree of
 * mapped memory is a mismatch). Sorted by address, mappings never overlap; one lock. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static check_map *maps;
static size_t nmaps, maps_cap;

/* The first mapping whose end is above p. Under the lock. */
static size_t first_above(uintptr_t p)
{
    size_t lo = 0, hi = nmaps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (maps[mid].base + maps[mid].bytes <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void check__map_add(uintptr_t base, size_t bytes, unsigned long long handle, uint32_t stack)
{
    pthread_mutex_lock(&lock);
    if (nmaps == maps_cap) {
        size_t cap = maps_cap ? maps_cap * 2 : 64;
        check_map *grown = realloc(maps, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&lock);
            return;
        }
        maps = grown;
        maps_cap = cap;
    }
    size_t i = first_above(base);
    memmove(&maps[i + 1], &maps[i], (nmaps - i) * sizeof *maps);
    maps[i] = (check_map){base, bytes, handle, stack};
    nmaps++;
    pthread_mutex_unlock(&lock);
}

int check__map_at(uintptr_t p, check_map *out)
{
    pthread_mutex_lock(&lock);
    size_t i = first_above(p);
    int found = i < nmaps && maps[i].base <= p;
    if (found)
        *out = maps[i];
    pthread_mutex_unlock(&lock);
    return found;
}

int check__map_starts_in(uintptr_t base, size_t bytes)
{
    pthread_mutex_lock(&lock);
    size_t i = first_above(base);
    int any = i < nmaps && maps[i].base < base + bytes;
    pthread_mutex_unlock(&lock);
    return any;
}

size_t check__map_take(int (*chosen)(const check_map *m, const void *arg), const void *arg,
                       unsigned long long *handles, size_t max)
{
    size_t n = 0, o = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nmaps; i++) {
        if (chosen(&maps[i], arg) && n < max) {
            handles[n++] = maps[i].handle;
            continue;
        }
        maps[o++] = maps[i];
    }
    nmaps = o;
    pthread_mutex_unlock(&lock);
    return n;
}
