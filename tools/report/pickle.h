/* A writer of Python's pickle format, protocol 2, for the few types a PyTorch memory snapshot
 * holds (report_memory_viz): dicts, lists, tuples of two, ints of any size up to 64 bits, text,
 * False, and references to objects written before. The opcodes are those of CPython's
 * Lib/pickletools.py; the ones used here are also the ones PyTorch's own viewer
 * (torch/utils/viz/MemoryViz.js) reads, so a file opens both in Python and in the viewer.
 * A dict or list is written as its empty form and then batches of at most PICKLE_BATCH items
 * (as CPython's pickler does): the viewer spreads each batch into a call's arguments. */
#ifndef GPUMEM_REPORT_PICKLE_H
#define GPUMEM_REPORT_PICKLE_H

#include <stdint.h>
#include <stdio.h>

#define PICKLE_BATCH 1000

typedef struct {
    FILE *f;
    uint32_t memo;  /* the next memo slot */
    uint32_t items; /* items in the batch open in the innermost dict or list */
} pickle_out;

void pickle_start(pickle_out *p, FILE *f);
void pickle_stop(pickle_out *p);

/* Containers: begin, the items (a dict's as key, value pairs: call pickle_item after each
 * pair; a list's: after each value), end. The innermost container's batch count is saved by
 * the caller across nested containers (pickle_begin returns it, pickle_end takes it). */
uint32_t pickle_dict(pickle_out *p);
uint32_t pickle_list(pickle_out *p);
void pickle_item(pickle_out *p, char close);
void pickle_end(pickle_out *p, char close, uint32_t saved);

void pickle_int(pickle_out *p, int64_t v);
void pickle_uint(pickle_out *p, uint64_t v);
void pickle_text(pickle_out *p, const char *s);
void pickle_false(pickle_out *p);
/* The object on top (just written) kept as memo slot; returns the slot. */
uint32_t pickle_keep(pickle_out *p);
/* The object kept in slot, again (the same object: Python sees one object twice). */
void pickle_again(pickle_out *p, uint32_t slot);
/* Replaces the two objects on top with a tuple of them. */
void pickle_tuple2(pickle_out *p);

/* Dicts and lists close with these. */
#define PICKLE_SETITEMS 'u'
#define PICKLE_APPENDS 'e'

#endif
