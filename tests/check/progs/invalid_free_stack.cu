// expect: invalid-free cudaFree - at=main@planted
//
// cudaFree of the address of a local variable.
#include "check_prog.h"

int main(void)
{
    prog_init();
    volatile int local[16] = {0};
    PLANTED(cudaFree((void *)local)); // @planted
    printf("local[0] = %d\n", local[0]);
    prog_done("invalid_free_stack");
    return 0;
}
