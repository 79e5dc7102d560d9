// C++98 code that puts a macro right after a string literal ("%"PRIu64): a user-defined
// literal suffix to C++11, which GCC (nvcc's host compiler) warns about and clang stops at.
#include <cinttypes>
#include <cstdio>

#define UNIT "ms"

void report(uint64_t bytes, double t)
{
    printf("%"PRIu64" bytes in %.1f "UNIT"\n", bytes, t);
}
