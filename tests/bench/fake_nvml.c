/* A stand-in for libnvidia-ml.so.1: the functions tools/bench/link.c loads, answering as
 * FAKE_NVML says: "ok" (PCIe 5.0 x16 at most, 1.0 x16 at rest, 5.0 x16 once asked again),
 * "hidden" (no link information, as in some virtual machines), "nodevice" or "noinit" (NVML
 * does not start, as without the driver). */
#include <stdlib.h>
#include <string.h>

#include "nvml.h"

#define EXPORT __attribute__((visibility("default")))

static int current_reads;

static const char *mode(void)
{
    const char *m = getenv("FAKE_NVML");
    return m ? m : "ok";
}

EXPORT nvmlReturn_t nvmlInit_v2(void);
EXPORT nvmlReturn_t nvmlShutdown(void);
EXPORT const char *nvmlErrorString(nvmlReturn_t rc);
EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *dev);
EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t dev, unsigned int *v);
EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t dev, unsigned int *v);
EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t dev, unsigned int *v);
EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t dev, unsigned int *v);

nvmlReturn_t nvmlInit_v2(void)
{
    current_reads = 0;
    return strcmp(mode(), "noinit") == 0 ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t rc)
{
    return rc == NVML_ERROR_NOT_SUPPORTED      ? "Not Supported"
           : rc == NVML_ERROR_NOT_FOUND         ? "Not Found"
           : rc == NVML_ERROR_DRIVER_NOT_LOADED ? "Driver Not Loaded"
                                                : "Unknown Error";
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *dev)
{
    if (strcmp(mode(), "nodevice") == 0 || strcmp(id, "0000:3B:00.0") != 0)
        return NVML_ERROR_NOT_FOUND;
    *dev = (nvmlDevice_t)(void *)&current_reads;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t dev, unsigned int *v)
{
    (void)dev;
    if (strcmp(mode(), "hidden") == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *v = current_reads++ == 0 ? 1 : 5;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t dev, unsigned int *v)
{
    (void)dev;
    *v = 16;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t dev, unsigned int *v)
{
    (void)dev;
    if (strcmp(mode(), "hidden") == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *v = 5;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t dev, unsigned int *v)
{
    (void)dev;
    *v = 16;
    return NVML_SUCCESS;
}
