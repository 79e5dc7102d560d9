/* gpumem check's model of CUDA graph memory (graphs.c): allocation and free nodes are recorded
 * where the program makes them, copied into an executable graph when it is instantiated, and
 * turned into the engine's allocations and releases (engine.h) each time a launch runs them, in
 * the order the nodes were made.
 *
 * Graphs, executable graphs and stream captures are known by the values of their handles
 * (cudaGraph_t / CUgraph, cudaGraphExec_t / CUgraphExec, check_capture_key of a capture's id).
 * Every entry point is thread-safe. Nothing here calls CUDA. */
#ifndef GPUMEM_CHECK_GRAPHS_H
#define GPUMEM_CHECK_GRAPHS_H

#include <stddef.h>
#include <stdint.h>

/* cudaGraphInstantiateFlagAutoFreeOnLaunch and CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH. */
#define CHECK_GRAPH_AUTO_FREE_ON_LAUNCH 1ull

/* The key of the graph a stream capture builds, until the capture ends: apart from every graph
 * handle. */
uintptr_t check_capture_key(uint64_t capture_id);

/* An allocation node was added to graph (or to a capture): each launch that runs it allocates
 * bytes at p on device. call made the node (cudaGraphAddMemAllocNode, cuGraphAddNode,
 * cudaMallocAsync while capturing, ...) at stack: a leak of its memory is reported so. */
void check_graph_alloc_node(uintptr_t graph, const char *call, uintptr_t p, size_t bytes,
                            int device, uint32_t stack);
/* A free node for p was added to graph (or to a capture): each launch that runs it releases p,
 * as call at stack. */
void check_graph_free_node(uintptr_t graph, const char *call, uintptr_t p, uint32_t stack);

/* The nodes of from join graph, after its own: a capture that ended in graph, or a child graph
 * whose ownership moved to its parent. from is forgotten. */
void check_graph_merge(uintptr_t graph, uintptr_t from);
/* graph was destroyed (or a capture failed): its nodes are forgotten. Executable graphs made
 * from it keep their copies, and memory its launches allocated stays live until released. */
void check_graph_destroyed(uintptr_t graph);

/* graph was instantiated as exec with flags (CHECK_GRAPH_AUTO_FREE_ON_LAUNCH, ...): exec gets
 * a copy of graph's memory nodes. */
void check_graph_instantiated(uintptr_t graph, uintptr_t exec, unsigned long long flags);
/* exec was destroyed. Memory its launches allocated stays live until released. */
void check_graph_exec_destroyed(uintptr_t exec);
/* A launch of exec succeeded: with CHECK_GRAPH_AUTO_FREE_ON_LAUNCH, what its last launch
 * allocated and nobody released is released first; then its nodes run, in the order they were
 * made: allocation nodes make their memory live, free nodes release theirs (a double release is
 * reported as such, with the free node's stack). Cheap when no executable graph has memory
 * nodes. */
void check_graph_launched(uintptr_t exec);

#endif
