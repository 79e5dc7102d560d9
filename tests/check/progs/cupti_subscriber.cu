// expect-status: unchecked
//
// Another CUPTI subscriber: a static constructor calls cuptiSubscribe before any CUDA call,
// as a profiler built into the program would. CUPTI allows one subscriber per process, so
// gpumem check cannot subscribe and must say that the process went unchecked (and report no
// findings) rather than claim a clean run. The program itself is clean.
#include <cupti.h>

#include "check_prog.h"

static CUpti_SubscriberHandle subscriber;
static CUptiResult subscribed = CUPTI_ERROR_UNKNOWN;
static unsigned long callbacks;

static void CUPTIAPI count_callbacks(void *, CUpti_CallbackDomain, CUpti_CallbackId,
                                     const void *)
{
    __atomic_add_fetch(&callbacks, 1, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void subscribe_first(void)
{
    subscribed = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)count_callbacks, NULL);
    if (subscribed == CUPTI_SUCCESS)
        subscribed = cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
}

int main(void)
{
    const char *why = "";
    if (subscribed != CUPTI_SUCCESS)
        cuptiGetResultString(subscribed, &why);
    printf("cupti_subscriber: own cuptiSubscribe: %s%s\n",
           subscribed == CUPTI_SUCCESS ? "ok" : "failed: ", why);

    prog_init();
    void *d = NULL, *h = NULL;
    CHECK(cudaMalloc(&d, 4096));
    CHECK(cudaMallocHost(&h, 4096));
    CHECK(cudaMemcpy(d, h, 4096, cudaMemcpyHostToDevice));
    CHECK(cudaFreeHost(h));
    CHECK(cudaFree(d));
    printf("cupti_subscriber: %lu runtime API callbacks seen\n",
           __atomic_load_n(&callbacks, __ATOMIC_RELAXED));
    if (subscribed == CUPTI_SUCCESS && cuptiUnsubscribe(subscriber) != CUPTI_SUCCESS) {
        fprintf(stderr, "cupti_subscriber: cuptiUnsubscribe failed\n");
        return 1;
    }
    prog_done("cupti_subscriber");
    return 0;
}
