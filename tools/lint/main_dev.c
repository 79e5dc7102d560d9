/* gpumem-lint-dev: `gpumem lint` on its own, for the development loop, the tests and the
 * benchmark, without building the gpumem library. */
#include "../tool.h"

int main(int argc, char **argv)
{
    return gpumem_lint_main(argc, argv);
}
