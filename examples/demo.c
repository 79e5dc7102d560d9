/* gpumem demo: every allocation kind, one release call, and the mistakes gpumem catches.
 *
 * Uses the GPU when there is one and the simulated device otherwise, and says which.
 * Exit status: 0 when every mistake was caught and nothing leaked; 1 when an allocation
 * failed (try GPUMEM_FAIL_ALLOC=N); 3 when something was left allocated. */
#include <stdio.h>
#include <string.h>

#include <gpumem.h>

/* The demo prints each message itself, indented, and remembers the last code. */
static int caught;

static void show(const gpumem_error *e, void *arg)
{
    (void)arg;
    caught = e->code;
    printf("    | ");
    for (const char *c = e->message; *c; c++) {
        putchar(*c);
        if (*c == '\n')
            printf("    | ");
    }
    printf("\n");
}

static int expect(const char *what, int got, int want)
{
    printf("  -> %s: %s (%s)\n\n", what, gpumem_err_name(got),
           got == want ? "caught" : "NOT CAUGHT AS EXPECTED");
    return got == want ? 0 : 1;
}

static void quiet(const gpumem_error *e, void *arg)
{
    (void)e;
    (void)arg;
}

static void choose_backend(void)
{
    gpumem_set_error_handler(quiet, NULL); /* the reason is printed below, once */
    int status = gpumem_init();
    gpumem_set_error_handler(show, NULL);
    if (status == GPUMEM_OK && strcmp(gpumem_backend(), "sim") == 0) {
        printf("gpumem demo: using the simulated device, as GPUMEM_BACKEND=sim asks\n\n");
        return;
    }
    if (status == GPUMEM_OK) {
        gpumem_device_info d;
        char total[32];
        if (gpumem_device_get(0, &d) == GPUMEM_OK)
            printf("gpumem demo: using the GPU: %s (device 0, %s)\n\n", d.name,
                   gpumem_format_bytes(d.total_bytes, total, sizeof total));
        return;
    }
    const char *why = strchr(gpumem_last_error()->message, '\n');
    printf("gpumem demo: no GPU usable here:%s\n", why ? why : "");
    printf("gpumem demo: using the simulated device (memory in host RAM)\n\n");
    gpumem_backend_select("sim");
}

int main(void)
{
    int failures = 0;
    choose_backend();
    if (gpumem_init() != GPUMEM_OK)
        return 1;

    printf("1. one allocation of every kind\n");
    size_t n = 1 << 18; /* floats: 1 MiB */
    void *p[5] = {
        gpumem_device_alloc(n, sizeof(float)),
        gpumem_managed_alloc(n, sizeof(float), GPUMEM_ATTACH_GLOBAL),
        gpumem_pinned_alloc(n, sizeof(float)),
        gpumem_host_alloc(n, sizeof(float), GPUMEM_HOST_MAPPED | GPUMEM_HOST_WRITE_COMBINED),
        gpumem_device_alloc_async(n, sizeof(float), NULL),
    };
    int allocated = 1;
    for (int i = 0; i < 5; i++) {
        gpumem_info info;
        char size_text[32];
        if (!p[i] || gpumem_query(p[i], &info) != GPUMEM_OK) {
            allocated = 0;
            continue;
        }
        printf("   %-13s %s at %p, made at %s:%d, #%llu\n", gpumem_kind_name(info.kind),
               gpumem_format_bytes(info.bytes, size_text, sizeof size_text), p[i], info.file,
               info.line, (unsigned long long)info.seq);
    }

    printf("\n2. one release call for all of them: gpumem_free picks cudaFree, cudaFreeHost\n");
    for (int i = 0; i < 5; i++)
        failures += gpumem_free(p[i]) != GPUMEM_OK;
    printf("   released %d allocations\n\n", allocated ? 5 : 0);

    if (allocated) {
        printf("3. mistakes gpumem catches (raw CUDA says \"invalid argument\" or crashes)\n\n");
        char *pinned = gpumem_pinned_alloc(8192, 1);
        char *dev = gpumem_device_alloc(1024, sizeof(float));
        if (!pinned || !dev) {
            allocated = 0;
            gpumem_free(dev); /* the one that did succeed, if any (NULL is a no-op) */
        } else {
            printf("  a. mismatched release: stream-ordered release of pinned memory\n");
            failures += expect("mismatched release", gpumem_free_async(pinned, NULL), GPUMEM_EKIND); // gpumem-lint: ignore[GM011] the mistake shown

            printf("  b. double free\n");
            gpumem_free(dev);
            failures += expect("double free", gpumem_free(dev), GPUMEM_EDOUBLEFREE); // gpumem-lint: ignore[GM008] the mistake shown

            printf("  c. foreign pointer: memory gpumem never allocated\n");
            static float not_gpu_memory[64];
            failures += expect("foreign pointer", gpumem_free(not_gpu_memory), GPUMEM_EFOREIGN);

            printf("  d. interior pointer\n");
            failures += expect("interior pointer", gpumem_free(pinned + 4), GPUMEM_EINTERIOR); // gpumem-lint: ignore[GM010] the mistake shown

            printf("  e. overflowing size: count * size does not fit in size_t\n");
            size_t count = (size_t)-1 / 2; /* e.g. a negative count converted to size_t */
            void *big = gpumem_device_alloc(count, sizeof(double)); // gpumem-lint: ignore[GM001] refused: NULL
            failures += expect("overflowing size", big ? GPUMEM_OK : caught, GPUMEM_EOVERFLOW);
        }
        gpumem_free(pinned); // gpumem-lint: ignore[GM008] a. was refused (GPUMEM_EKIND): this is the release
    }

    gpumem_live live;
    gpumem_live_get(&live);
    printf("4. leak check: %llu allocations live\n", (unsigned long long)live.count[0]);
    if (live.count[0] != 0)
        return 3;
    if (!allocated) {
        printf("an allocation failed (above); everything that was allocated was released\n");
        return 1;
    }
    printf("%s\n", failures ? "some mistakes were not caught" : "all five mistakes caught");
    return failures ? 1 : 0;
}
