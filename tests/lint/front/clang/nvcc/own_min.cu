// A program's own min and max, and std's brought in by `using`: the prelude's host min and
// max must not make these ambiguous.
#include <algorithm>
#include <cstddef>
#include <vector>

template <typename T> static T min(T a, T b) { return a < b ? a : b; }
static int max(int a, int b) { return a > b ? a : b; }

static size_t smallest(const std::vector<int> &v, size_t limit)
{
    using std::min;
    return min(v.size(), limit);
}

namespace all_of_std {
using namespace std;
static long biggest(long a, long b) { return max(a, b); }
}

int main(void)
{
    std::vector<int> v(3);
    return min(1, 2) + max(3, 4) + (int)smallest(v, 2) + (int)all_of_std::biggest(1, 2);
}
