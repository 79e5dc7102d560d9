// expect: mismatched-release operator delete managed bytes=256 at=main@delete_one alloc_at=main@one
// expect: mismatched-release operator delete[] managed bytes=4096 at=main@delete_many alloc_at=main@many
//
// C++: managed memory from cudaMallocManaged released with delete (one object) and delete[]
// (an array). With C++14 and later, delete of a complete type calls the sized operator
// delete(void *, size_t); both spellings count as "operator delete".
#include <new>

#include "check_prog.h"

struct Block {
    int values[64];
};

int main(void)
{
    prog_init();
    Block *one = nullptr;
    int *many = nullptr;
    CHECK(cudaMallocManaged(&one, sizeof(Block))); // @one
    CHECK(cudaMallocManaged(&many, 1024 * sizeof(int))); // @many
    one->values[0] = 1;
    many[1023] = 2;
    delete one; // @delete_one
    delete[] many; // @delete_many
    printf("mismatch_delete_managed: still running after delete and delete[] of managed memory\n");
    prog_done("mismatch_delete_managed");
    return 0;
}
