#include <stddef.h>
void release_buffer(void *p);
void alloc_buffer(float **p, size_t n);
void fill(float *p, size_t n);
