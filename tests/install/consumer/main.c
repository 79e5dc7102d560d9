/* A program built against the installed gpumem, as a user would build it. */
#include <gpumem.h>
#include <stdio.h>

int main(void)
{
    void *p = gpumem_device_alloc(256, sizeof(float));
    gpumem_info info;
    int ok = p && gpumem_query(p, &info) == GPUMEM_OK && info.bytes == 1024 &&
             gpumem_free(p) == GPUMEM_OK;
    printf("consumer: gpumem %s on %s: %s\n", gpumem_version(), gpumem_backend(),
           ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}
