/* A program built against the installed gpumem, as a user would build it. With the argument
 * "leak" it keeps its allocation, for gpumem check to find. */
#include <gpumem.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    void *p = gpumem_device_alloc(256, sizeof(float));
    gpumem_info info;
    int ok = p && gpumem_query(p, &info) == GPUMEM_OK && info.bytes == 1024;
    if (argc > 1 && strcmp(argv[1], "leak") == 0) {
        printf("consumer: kept 1 KiB of %s memory\n", ok ? "device" : "no");
        // gpumem-lint: ignore[GM006] the leak is the point: gpumem check must report it
        return ok ? 0 : 1;
    }
    ok = ok && gpumem_free(p) == GPUMEM_OK;
    printf("consumer: gpumem %s on %s: %s\n", gpumem_version(), gpumem_backend(),
           ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}
