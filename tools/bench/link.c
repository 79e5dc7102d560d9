/* `gpumem bench`: the PCIe link of the device, from NVML.
 *
 * NVML's header comes with the CUDA toolkit but not with every install of it, and its library
 * comes with the driver: the header is optional at build time (GPUMEM_HAVE_NVML) and the
 * library is loaded with dlopen, so that gpumem has no link dependency on it and runs where
 * it is missing. Either way the table then says why it has no limit to compare with. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "bench.h"

#ifdef GPUMEM_HAVE_NVML
#include <dlfcn.h>
#include <nvml.h>

typedef struct nvml_api {
    void *lib;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    const char *(*error_string)(nvmlReturn_t);
    nvmlReturn_t (*handle_by_pci_bus_id)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*cur_gen)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*cur_width)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*max_gen)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*max_width)(nvmlDevice_t, unsigned int *);
} nvml_api;

/* dlsym returns an object pointer; POSIX guarantees that its bits are the function's address.
 * Copied, not cast: ISO C has no conversion between the two kinds of pointer. */
static int nvml_sym(void *lib, void *fn, size_t fn_size, const char *name)
{
    void *sym = dlsym(lib, name);
    if (!sym || fn_size != sizeof sym)
        return 0;
    memcpy(fn, &sym, sizeof sym);
    return 1;
}
#define NVML_SYM(api, field, name) nvml_sym((api)->lib, &(api)->field, sizeof (api)->field, name)

static nvml_api nvml;       /* open between bench_link_open() and bench_link_close() */
static nvmlDevice_t nvml_dev; /* valid while nvml.lib is set */

static const char *nvml_error(nvmlReturn_t rc, char *buf, size_t n)
{
    if (nvml.error_string)
        snprintf(buf, n, "%s", nvml.error_string(rc));
    else
        snprintf(buf, n, "NVML error %d", (int)rc);
    return buf;
}

void bench_link_open(const char *pci_bus_id, bench_link *link)
{
    char err[128];
    bench_link_close();
    nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!nvml.lib) {
        snprintf(link->why, sizeof link->why, "cannot load NVML: %s", dlerror());
        return;
    }
    int ok = NVML_SYM(&nvml, init, "nvmlInit_v2") && NVML_SYM(&nvml, shutdown, "nvmlShutdown") &&
             NVML_SYM(&nvml, handle_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") &&
             NVML_SYM(&nvml, cur_gen, "nvmlDeviceGetCurrPcieLinkGeneration") &&
             NVML_SYM(&nvml, cur_width, "nvmlDeviceGetCurrPcieLinkWidth") &&
             NVML_SYM(&nvml, max_gen, "nvmlDeviceGetMaxPcieLinkGeneration") &&
             NVML_SYM(&nvml, max_width, "nvmlDeviceGetMaxPcieLinkWidth");
    NVML_SYM(&nvml, error_string, "nvmlErrorString");
    if (!ok) {
        snprintf(link->why, sizeof link->why, "NVML lacks the PCIe link queries");
        dlclose(nvml.lib);
        memset(&nvml, 0, sizeof nvml);
        return;
    }
    nvmlReturn_t rc = nvml.init();
    if (rc != NVML_SUCCESS) {
        snprintf(link->why, sizeof link->why, "NVML did not start: %s",
                 nvml_error(rc, err, sizeof err));
        dlclose(nvml.lib);
        memset(&nvml, 0, sizeof nvml);
        return;
    }
    rc = nvml.handle_by_pci_bus_id(pci_bus_id, &nvml_dev);
    if (rc != NVML_SUCCESS) {
        snprintf(link->why, sizeof link->why, "NVML does not know PCI device %s: %s", pci_bus_id,
                 nvml_error(rc, err, sizeof err));
        bench_link_close();
        return;
    }
    unsigned gen = 0, width = 0;
    if (nvml.cur_gen(nvml_dev, &gen) == NVML_SUCCESS &&
        nvml.cur_width(nvml_dev, &width) == NVML_SUCCESS) {
        link->cur_gen = gen;
        link->cur_width = width;
    }
    /* A virtual machine may hide the link: NVML then answers "Not Supported". */
    rc = nvml.max_gen(nvml_dev, &gen);
    if (rc == NVML_SUCCESS)
        rc = nvml.max_width(nvml_dev, &width);
    if (rc == NVML_SUCCESS) {
        link->known = 1;
        link->max_gen = gen;
        link->max_width = width;
    } else {
        snprintf(link->why, sizeof link->why, "NVML has no PCIe link for %s: %s", pci_bus_id,
                 nvml_error(rc, err, sizeof err));
    }
}

void bench_link_busy(bench_link *link)
{
    unsigned gen = 0, width = 0;
    if (nvml.lib && nvml.cur_gen(nvml_dev, &gen) == NVML_SUCCESS &&
        nvml.cur_width(nvml_dev, &width) == NVML_SUCCESS) {
        link->busy_gen = gen;
        link->busy_width = width;
    }
}

void bench_link_close(void)
{
    if (!nvml.lib)
        return;
    nvml.shutdown();
    dlclose(nvml.lib);
    memset(&nvml, 0, sizeof nvml);
}
#else
void bench_link_open(const char *pci_bus_id, bench_link *link)
{
    (void)pci_bus_id;
    snprintf(link->why, sizeof link->why, "built without nvml.h");
}

void bench_link_busy(bench_link *link)
{
    (void)link;
}

void bench_link_close(void)
{
}
#endif
