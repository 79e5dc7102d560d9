/* An error handler whose body is in another file and that does not return (named in
 * gpumem.Memory:NoReturnFunctions; `error` by default, also as the macro a call is written
 * with) ends the path: no use-after-release on the path that released and then called it. */
#include <stdlib.h>
int ev_err(const char *file, int num, int line, const char *fn, int flag);
#define error(num, fn) ev_err(__FILE__, num, __LINE__, fn, 0)
struct mat { int *base; int n; };

struct mat *mat_get(int n) {
  struct mat *m = calloc(1, sizeof *m);
  if (!m)
    return 0;
  if ((m->base = calloc(n, sizeof(int))) == NULL) {
    free(m);
    error(1, "mat_get");
  }
  m->n = n;
  return m;
}

int report(const char *what);
void handler_that_returns(void) {
  int *p = malloc(4);
  if (!p)
    return;
  free(p);
  report("freed");
  p[0] = 1; /* expected-warning{{host write to memory allocated with malloc after it was released with free}} */
}
