/* A protocol buffers writer for one message at a time (report_perfetto): varints, fixed64,
 * length-delimited fields and nested messages, the wire format of protobuf's encoding guide.
 * A nested message reserves one byte for its length and moves its content on when the length
 * needs more; the messages written here are short, so that move is rare. */
#ifndef GPUMEM_REPORT_PROTOBUF_H
#define GPUMEM_REPORT_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    unsigned char *p;
    size_t n, cap;
    int failed; /* out of memory: the message is incomplete */
} pb_buf;

void pb_uint(pb_buf *b, unsigned field, uint64_t v); /* uint32/64, int32/64 >= 0, bool, enum */
void pb_fixed64(pb_buf *b, unsigned field, uint64_t v);
void pb_string(pb_buf *b, unsigned field, const char *s); /* made valid UTF-8 */
/* A nested message: open, its fields, close with what open returned. */
size_t pb_open(pb_buf *b, unsigned field);
void pb_close(pb_buf *b, size_t at);
/* Writes b to f as one field (a Trace's `packet`) and empties b. Returns 0, or -1. */
int pb_flush_as(pb_buf *b, unsigned field, FILE *f);
void pb_free(pb_buf *b);

#endif
