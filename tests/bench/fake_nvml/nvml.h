/* The few declarations of NVML's nvml.h that tools/bench/link.c uses, with the real header's
 * names and values, so that the NVML path builds and runs on machines without the header
 * (test_bench_link loads fake_nvml.c in place of libnvidia-ml.so.1). */
#ifndef GPUMEM_FAKE_NVML_H
#define GPUMEM_FAKE_NVML_H

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_DRIVER_NOT_LOADED = 9
} nvmlReturn_t;

/* The members of the real nvmlPciInfo_t that link.c reads (the real one has more). */
typedef struct nvmlPciInfo_st {
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
} nvmlPciInfo_t;

#endif
