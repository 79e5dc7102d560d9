/* `gpumem bench`: the PCIe link of the device, and what joins two devices, from NVML.
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
    /* NVLink, optional (NULL where this NVML lacks them). The state and the remote device
     * type are enums of NVML's (nvmlEnableState_t, nvmlIntNvLinkDeviceType_t) read as ints:
     * NVML_FEATURE_ENABLED is 1, NVML_NVLINK_DEVICE_TYPE_SWITCH 2. */
    nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned int, int *);
    nvmlReturn_t (*nvlink_remote_pci)(nvmlDevice_t, unsigned int, nvmlPciInfo_t *);
    nvmlReturn_t (*nvlink_remote_type)(nvmlDevice_t, unsigned int, int *);
} nvml_api;

#ifndef NVML_NVLINK_MAX_LINKS
#define NVML_NVLINK_MAX_LINKS 18
#endif
enum { NVLINK_ACTIVE = 1, NVLINK_REMOTE_SWITCH = 2 };

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

/* Loads and starts NVML; on failure says why in @why and leaves it closed. */
static int nvml_start(char *why, size_t n)
{
    char err[128];
    bench_link_close();
    nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!nvml.lib) {
        snprintf(why, n, "cannot load NVML: %s", dlerror());
        return -1;
    }
    int ok = NVML_SYM(&nvml, init, "nvmlInit_v2") && NVML_SYM(&nvml, shutdown, "nvmlShutdown") &&
             NVML_SYM(&nvml, handle_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") &&
             NVML_SYM(&nvml, cur_gen, "nvmlDeviceGetCurrPcieLinkGeneration") &&
             NVML_SYM(&nvml, cur_width, "nvmlDeviceGetCurrPcieLinkWidth") &&
             NVML_SYM(&nvml, max_gen, "nvmlDeviceGetMaxPcieLinkGeneration") &&
             NVML_SYM(&nvml, max_width, "nvmlDeviceGetMaxPcieLinkWidth");
    NVML_SYM(&nvml, error_string, "nvmlErrorString");
    NVML_SYM(&nvml, nvlink_state, "nvmlDeviceGetNvLinkState");
    NVML_SYM(&nvml, nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    NVML_SYM(&nvml, nvlink_remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
    if (!ok) {
        snprintf(why, n, "NVML lacks the PCIe link queries");
        dlclose(nvml.lib);
        memset(&nvml, 0, sizeof nvml);
        return -1;
    }
    nvmlReturn_t rc = nvml.init();
    if (rc != NVML_SUCCESS) {
        snprintf(why, n, "NVML did not start: %s", nvml_error(rc, err, sizeof err));
        dlclose(nvml.lib);
        memset(&nvml, 0, sizeof nvml);
        return -1;
    }
    return 0;
}

void bench_link_open(const char *pci_bus_id, bench_link *link)
{
    char err[128];
    if (nvml_start(link->why, sizeof link->why) != 0)
        return;
    nvmlReturn_t rc = nvml.handle_by_pci_bus_id(pci_bus_id, &nvml_dev);
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

/* The NVLink links of @src that reach the device at PCI @dom:@bus:@dev, directly or through an
 * NVSwitch (every GPU behind the switch is reached through each of them). */
static unsigned nvlinks_to(nvmlDevice_t src, unsigned dom, unsigned bus, unsigned dev)
{
    unsigned n = 0;
    if (!nvml.nvlink_state || !nvml.nvlink_remote_pci)
        return 0;
    for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
        int state = 0, type = -1;
        if (nvml.nvlink_state(src, l, &state) != NVML_SUCCESS || state != NVLINK_ACTIVE)
            continue;
        if (nvml.nvlink_remote_type && nvml.nvlink_remote_type(src, l, &type) == NVML_SUCCESS &&
            type == NVLINK_REMOTE_SWITCH) {
            n++;
            continue;
        }
        nvmlPciInfo_t pci;
        memset(&pci, 0, sizeof pci);
        if (nvml.nvlink_remote_pci(src, l, &pci) == NVML_SUCCESS && pci.domain == dom &&
            pci.bus == bus && pci.device == dev)
            n++;
    }
    return n;
}

/* Without NVLink: the PCIe limit of the slower of the two devices' links. */
static void pcie_pair(nvmlDevice_t a, nvmlDevice_t b, bench_pair_link *pair)
{
    char err[128];
    unsigned g[2] = {0, 0}, w[2] = {0, 0};
    nvmlDevice_t d[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        nvmlReturn_t rc = nvml.max_gen(d[i], &g[i]);
        if (rc == NVML_SUCCESS)
            rc = nvml.max_width(d[i], &w[i]);
        if (rc != NVML_SUCCESS) {
            snprintf(pair->why, sizeof pair->why, "NVML shows no NVLink between them, and no PCIe "
                     "link for device %d: %s", i ? pair->dst : pair->src,
                     nvml_error(rc, err, sizeof err));
            return;
        }
    }
    int lower = bench_link_gbps(g[1], w[1]) < bench_link_gbps(g[0], w[0]);
    pair->pcie_gen = g[lower];
    pair->pcie_width = w[lower];
    pair->limit_gbps = bench_link_gbps(g[lower], w[lower]);
    if (pair->limit_gbps <= 0.0)
        snprintf(pair->why, sizeof pair->why, "NVML shows no NVLink between them, and PCIe "
                 "generation %u, x%u", g[lower], w[lower]);
}

void bench_link_pair(const char *src_bus, const char *dst_bus, int cc_major, int cc_minor,
                     bench_pair_link *pair)
{
    char err[128];
    nvmlDevice_t s, d;
    unsigned dom, bus, dev, fn;
    if (sscanf(dst_bus, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) {
        snprintf(pair->why, sizeof pair->why, "cannot read the PCI bus id '%s'", dst_bus);
        return;
    }
    if (nvml_start(pair->why, sizeof pair->why) != 0)
        return;
    nvmlReturn_t rc = nvml.handle_by_pci_bus_id(src_bus, &s);
    if (rc == NVML_SUCCESS)
        rc = nvml.handle_by_pci_bus_id(dst_bus, &d);
    if (rc != NVML_SUCCESS) {
        snprintf(pair->why, sizeof pair->why, "NVML does not know PCI device %s or %s: %s",
                 src_bus, dst_bus, nvml_error(rc, err, sizeof err));
        bench_link_close();
        return;
    }
    pair->nvlinks = nvlinks_to(s, dom, bus, dev);
    if (pair->nvlinks) {
        pair->nvlink_gbps = bench_nvlink_gbps(cc_major, cc_minor);
        pair->limit_gbps = pair->nvlinks * pair->nvlink_gbps;
        if (pair->limit_gbps <= 0.0)
            snprintf(pair->why, sizeof pair->why, "NVLink, %u links, of a device of compute "
                     "capability %d.%d, whose link rate gpumem does not know", pair->nvlinks,
                     cc_major, cc_minor);
    } else {
        pcie_pair(s, d, pair);
    }
    bench_link_close();
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

void bench_link_pair(const char *src_bus, const char *dst_bus, int cc_major, int cc_minor,
                     bench_pair_link *pair)
{
    (void)src_bus, (void)dst_bus, (void)cc_major, (void)cc_minor;
    snprintf(pair->why, sizeof pair->why, "built without nvml.h");
}
#endif
