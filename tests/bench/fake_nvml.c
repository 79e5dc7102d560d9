/* A stand-in for libnvidia-ml.so.1: the functions tools/bench/link.c loads, answering as
 * FAKE_NVML says: "ok" (PCIe 5.0 x16 at most, 1.0 x16 at rest, 5.0 x16 once asked again),
 * "hidden" (no link information, as in some virtual machines), "nodevice" or "noinit" (NVML
 * does not start, as without the driver). Two devices: 0000:3B:00.0 and 0000:3C:00.0 (PCIe 4.0
 * x16 at most). Between them, in "ok": 18 NVLink links of 3B go to 3C, and 3C's 12 links go to
 * 3B on its first 6 and to another GPU on the rest; in "nvswitch" every link of both goes to an
 * NVSwitch; elsewhere there is no NVLink. */
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

static int second; /* the handle of 0000:3C:00.0 points here */

static int is_second(nvmlDevice_t dev)
{
    return (void *)dev == (void *)&second;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *dev)
{
    if (strcmp(mode(), "nodevice") == 0)
        return NVML_ERROR_NOT_FOUND;
    if (strcmp(id, "0000:3B:00.0") == 0)
        *dev = (nvmlDevice_t)(void *)&current_reads;
    else if (strcmp(id, "0000:3C:00.0") == 0)
        *dev = (nvmlDevice_t)(void *)&second;
    else
        return NVML_ERROR_NOT_FOUND;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned int link, int *active);
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned int link,
                                                        nvmlPciInfo_t *pci);
EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t dev, unsigned int link,
                                                        int *type);

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned int link, int *active)
{
    int nv = strcmp(mode(), "ok") == 0 || strcmp(mode(), "nvswitch") == 0;
    if (!nv)
        return NVML_ERROR_NOT_SUPPORTED;
    if (link >= 18)
        return NVML_ERROR_INVALID_ARGUMENT;
    *active = !is_second(dev) || link < 12;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t dev, unsigned int link, int *type)
{
    (void)dev, (void)link;
    *type = strcmp(mode(), "nvswitch") == 0 ? 2 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned int link,
                                                 nvmlPciInfo_t *pci)
{
    pci->domain = 0;
    pci->bus = is_second(dev) ? (link < 6 ? 0x3B : 0x3D) : 0x3C;
    pci->device = 0;
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
    if (strcmp(mode(), "hidden") == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *v = is_second(dev) ? 4 : 5;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t dev, unsigned int *v)
{
    (void)dev;
    *v = 16;
    return NVML_SUCCESS;
}
