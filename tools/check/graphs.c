/* gpumem check's model of CUDA graph memory (graphs.h).
 *
 * A graph's allocation node allocates nothing when it is added: each launch of an executable
 * graph made from it allocates, at the address the node got when it was added, and the memory
 * is released by a free node when a launch runs it, by cudaFree / cudaFreeAsync (cuMemFree /
 * cuMemFreeAsync) outside the graph, by the next launch of a graph instantiated with
 * cudaGraphInstantiateFlagAutoFreeOnLaunch, or never (a leak). So the nodes are kept here, per
 * graph, and become the engine's allocations and releases at each launch, on the thread that
 * launched, before the launch call returns to the program: in the order the program made the
 * calls, which is the order in which its later cudaFree and launches are seen too.
 *
 * Why not CUPTI's memory activity records (CUPTI_ACTIVITY_KIND_MEMORY2), which report graph
 * allocations and releases as the device makes them: they arrive in buffers, later and in
 * batches, not in order with the API calls that gpumem check sees as they happen, so a
 * cudaFree right after a launch would be seen before the launch's allocation; they carry no
 * host stack, so a leak could not be shown where its node was made; and subscribing to them
 * adds work on the device side for every program. The host order is exact for what the
 * program asks: CUDA runs a launch's nodes later, but the allocation is the program's from the
 * launch on, and a release outside the graph is valid only after it.
 *
 * Nodes run in the order they were added. That is an order the graph's dependencies allow
 * (a node's dependencies exist before it, and a capture adds nodes in stream order), and the
 * one that matters: CUDA gives one address to two allocations of a graph only when the first
 * is freed before the second is allocated. */
#include "graphs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backtrace.h"
#include "engine.h"
#include "internal.h"

typedef struct {
    uintptr_t p;
    size_t bytes;     /* an allocation node's */
    const char *call; /* the call that made the node */
    uint32_t stack;   /* where */
    int device;       /* an allocation node's */
    int frees;        /* a free node; else an allocation node */
} mem_node;

typedef struct {
    uintptr_t key;            /* the graph's or executable graph's handle, or a capture's key */
    int exec;                 /* an executable graph */
    unsigned long long flags; /* an executable graph's instantiation flags */
    int launched;             /* an executable graph launched before */
    mem_node *nodes;
    size_t n, cap;
} mem_graph;

/* Graphs and executable graphs with memory nodes; programs have few, so a list. */
static pthread_mutex_t graphs_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_graph *graphs;
static size_t ngraphs, graphs_cap;
/* Executable graphs in the list: a launch of any other graph looks no further. */
static atomic_size_t nexecs;

uintptr_t check_capture_key(uint64_t capture_id)
{
    /* Handles are user-space addresses: bit 63 is never set in one. */
    return ((uintptr_t)1 << 63) | (uintptr_t)capture_id;
}

static mem_graph *find(uintptr_t key, int exec)
{
    for (size_t i = 0; i < ngraphs; i++)
        if (graphs[i].key == key && graphs[i].exec == exec)
            return &graphs[i];
    return NULL;
}

/* The entry of key, added (empty) if there was none; NULL when out of memory. Moves the other
 * entries: pointers to them are stale after it. */
static mem_graph *find_or_add(uintptr_t key, int exec)
{
    mem_graph *g = find(key, exec);
    if (g)
        return g;
    if (ngraphs == graphs_cap) {
        size_t cap = graphs_cap ? graphs_cap * 2 : 16;
        mem_graph *grown = realloc(graphs, cap * sizeof *grown);
        if (!grown)
            return NULL;
        graphs = grown;
        graphs_cap = cap;
    }
    g = &graphs[ngraphs++];
    *g = (mem_graph){.key = key, .exec = exec};
    if (exec)
        atomic_fetch_add(&nexecs, 1);
    return g;
}

static void drop(mem_graph *g)
{
    if (g->exec)
        atomic_fetch_sub(&nexecs, 1);
    free(g->nodes);
    *g = graphs[--ngraphs];
}

static int push_nodes(mem_graph *g, const mem_node *nodes, size_t n)
{
    if (g->n + n > g->cap) {
        size_t cap = g->cap ? g->cap : 8;
        while (cap < g->n + n)
            cap *= 2;
        mem_node *grown = realloc(g->nodes, cap * sizeof *grown);
        if (!grown)
            return -1;
        g->nodes = grown;
        g->cap = cap;
    }
    memcpy(g->nodes + g->n, nodes, n * sizeof *nodes);
    g->n += n;
    return 0;
}

static void add_node(uintptr_t graph, const mem_node *node)
{
    check_tls_busy++;
    pthread_mutex_lock(&graphs_lock);
    mem_graph *g = find_or_add(graph, 0);
    if (g)
        (void)push_nodes(g, node, 1); /* out of host memory: the node is not modelled */
    pthread_mutex_unlock(&graphs_lock);
    check_tls_busy--;
}

void check_graph_alloc_node(uintptr_t graph, const char *call, uintptr_t p, size_t bytes,
                            int device, uint32_t stack)
{
    const mem_node node = {.p = p, .bytes = bytes, .call = call, .stack = stack, .device = device};
    add_node(graph, &node);
}

void check_graph_free_node(uintptr_t graph, const char *call, uintptr_t p, uint32_t stack)
{
    const mem_node node = {.p = p, .call = call, .stack = stack, .frees = 1};
    add_node(graph, &node);
}

void check_graph_merge(uintptr_t graph, uintptr_t from)
{
    check_tls_busy++;
    pthread_mutex_lock(&graphs_lock);
    mem_graph *f = find(from, 0);
    if (f) {
        mem_graph moved = *f;
        *f = (mem_graph){.key = from}; /* emptied: find_or_add may move the entries */
        mem_graph *g = find_or_add(graph, 0);
        if (g)
            (void)push_nodes(g, moved.nodes, moved.n);
        free(moved.nodes);
        f = find(from, 0);
        if (f)
            drop(f);
    }
    pthread_mutex_unlock(&graphs_lock);
    check_tls_busy--;
}

static void forget(uintptr_t key, int exec)
{
    check_tls_busy++;
    pthread_mutex_lock(&graphs_lock);
    mem_graph *g = find(key, exec);
    if (g)
        drop(g);
    pthread_mutex_unlock(&graphs_lock);
    check_tls_busy--;
}

void check_graph_destroyed(uintptr_t graph)
{
    forget(graph, 0);
}

void check_graph_exec_destroyed(uintptr_t exec)
{
    forget(exec, 1);
}

void check_graph_instantiated(uintptr_t graph, uintptr_t exec, unsigned long long flags)
{
    check_tls_busy++;
    pthread_mutex_lock(&graphs_lock);
    mem_graph *stale = find(exec, 1); /* a handle CUDA reused: its destruction was missed */
    if (stale)
        drop(stale);
    mem_graph *g = find(graph, 0);
    if (g && g->n) {
        mem_node *copy = malloc(g->n * sizeof *copy);
        size_t n = g->n;
        if (copy) {
            memcpy(copy, g->nodes, n * sizeof *copy);
            mem_graph *e = find_or_add(exec, 1);
            if (e) {
                *e = (mem_graph){.key = exec, .exec = 1, .flags = flags, .nodes = copy, .n = n,
                                 .cap = n};
                copy = NULL;
            }
            free(copy);
        }
    }
    pthread_mutex_unlock(&graphs_lock);
    check_tls_busy--;
}

/* What the last launch of an auto-free graph allocated and nobody released: CUDA frees it
 * before the relaunch allocates again. */
static void auto_free(const mem_graph *e)
{
    uint32_t stack = gpumem__stack_capture(0);
    for (size_t i = 0; i < e->n; i++)
        if (!e->nodes[i].frees)
            (void)check_release_if_live("cudaGraphLaunch", 1u << GPUMEM_KIND_GRAPH,
                                        e->nodes[i].p, stack);
}

static void run_node(const mem_node *node)
{
    if (!node->frees) {
        check_alloc(node->call, GPUMEM_KIND_GRAPH, node->p, node->bytes, node->device, 0,
                    node->stack);
        return;
    }
    int state = check_release_begin(node->call, 1u << GPUMEM_KIND_GRAPH, node->p, node->stack);
    /* The launch succeeded: CUDA accepted the release. */
    if (state == CHECK_GO)
        check_release_end(node->p, 1);
    else if (state == CHECK_UNKNOWN)
        check_release_unknown_end(node->call, node->p, node->stack, 1);
}

void check_graph_launched(uintptr_t exec)
{
    if (atomic_load_explicit(&nexecs, memory_order_relaxed) == 0)
        return;
    check_tls_busy++;
    pthread_mutex_lock(&graphs_lock);
    mem_graph *e = find(exec, 1);
    if (e) {
        if ((e->flags & CHECK_GRAPH_AUTO_FREE_ON_LAUNCH) && e->launched)
            auto_free(e);
        e->launched = 1;
        for (size_t i = 0; i < e->n; i++)
            run_node(&e->nodes[i]);
    }
    pthread_mutex_unlock(&graphs_lock);
    check_tls_busy--;
}
