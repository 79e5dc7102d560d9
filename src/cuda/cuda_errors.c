/* The CUDA runtime's names and messages for cudaError_t values (generated at build time from
 * the runtime itself), and which errors are sticky. */
#include <stddef.h>

#include "backend.h"

static const struct {
    int code;
    const char *name;
    const char *text;
} table[] = {
    {0, "cudaSuccess", "no error"},
#include "cuda_error_table.h"
};

static int find(int err)
{
    size_t lo = 0, hi = sizeof table / sizeof *table; /* rows ascend by code */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (table[mid].code < err)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sizeof table / sizeof *table && table[lo].code == err ? (int)lo : -1;
}

const char *gpumem__cuda_error_name(int err)
{
    int i = find(err);
    return i < 0 ? NULL : table[i].name;
}

const char *gpumem__cuda_error_string(int err)
{
    int i = find(err);
    return i < 0 ? NULL : table[i].text;
}

/* Errors after which the context is unusable: every later call in the process fails too
 * (docs/cuda-facts.md measured this for cudaErrorMisalignedAddress). */
int gpumem__cuda_error_is_sticky(int err)
{
    switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorECCUncorrectable:
        return 1;
    default:
        return 0;
    }
}
