#include "helper.h"

int g(int c)
{
    void *p = gm_alloc(4);
    if (c)
        gm_leak(); /* gpumem-lint: ignore[GM001] suppressed on its line */
    return p != 0;
}
