/* realloc: a null result released nothing (the block is still the caller's, and still needs
 * its free); a non-null one replaced the block. */
#include <stdlib.h>

void grow(size_t n) {
  char *p = malloc(n);
  if (!p)
    return;
  char *q = realloc(p, 2 * n);
  if (!q) {
    free(p); /* no warning: the failed realloc released nothing */
    return;
  }
  free(q);
}

void grow_keeping_the_old_on_failure(char **buf, size_t n) {
  char *q = realloc(*buf, n);
  if (!q)
    return;
  *buf = q;
}

void released_by_realloc(size_t n) {
  char *p = malloc(n);
  if (!p)
    return;
  char *q = realloc(p, 2 * n);
  if (!q) {
    free(p);
    return;
  }
  free(p); /* expected-warning{{memory allocated with malloc is released again with free (it was released with realloc)}} */
  free(q);
}
