/* The doc test's ./prog: a program that only starts gpumem, so that it prints what gpumem
 * says about the environment (unknown or invalid GPUMEM_* options) and nothing else. */
#include <gpumem.h>

static void silent(const gpumem_error *e, void *arg)
{
    (void)e;
    (void)arg;
}

int main(void)
{
    gpumem_set_error_handler(silent, NULL);
    (void)gpumem_init(); /* no device is fine: the options are read either way */
    return 0;
}
