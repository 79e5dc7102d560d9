/* Protocol buffers' wire format (protobuf.h). A field is its tag (field number << 3 | wire
 * type) as a varint, then its value: a varint (type 0), eight bytes little-endian (type 1), or
 * a varint length and that many bytes (type 2: strings and nested messages). */
#include "protobuf.h"

#include <stdlib.h>
#include <string.h>

#include "sigsafe.h" /* gpumem__utf8_valid_dup */

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2 };

static int reserve(pb_buf *b, size_t more)
{
    if (b->failed)
        return -1;
    if (b->n + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more)
        cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static size_t varint_to(unsigned char *out, uint64_t v)
{
    size_t n = 0;
    do {
        out[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

static void varint(pb_buf *b, uint64_t v)
{
    if (reserve(b, 10) == 0)
        b->n += varint_to(b->p + b->n, v);
}

static void tag(pb_buf *b, unsigned field, unsigned wire)
{
    varint(b, (uint64_t)field << 3 | wire);
}

void pb_uint(pb_buf *b, unsigned field, uint64_t v)
{
    tag(b, field, WIRE_VARINT);
    varint(b, v);
}

void pb_fixed64(pb_buf *b, unsigned field, uint64_t v)
{
    tag(b, field, WIRE_FIXED64);
    if (reserve(b, 8) != 0)
        return;
    for (int i = 0; i < 8; i++)
        b->p[b->n++] = (unsigned char)(v >> (8 * i));
}

void pb_string(pb_buf *b, unsigned field, const char *s)
{
    char *valid = gpumem__utf8_valid_dup(s ? s : "");
    if (!valid) {
        b->failed = 1;
        return;
    }
    size_t n = strlen(valid);
    tag(b, field, WIRE_LEN);
    varint(b, n);
    if (reserve(b, n) == 0) {
        memcpy(b->p + b->n, valid, n);
        b->n += n;
    }
    free(valid);
}

size_t pb_open(pb_buf *b, unsigned field)
{
    tag(b, field, WIRE_LEN);
    if (reserve(b, 1) == 0)
        b->p[b->n++] = 0;
    return b->n;
}

void pb_close(pb_buf *b, size_t at)
{
    if (b->failed)
        return;
    size_t len = b->n - at;
    unsigned char v[10];
    size_t vn = varint_to(v, len);
    if (vn > 1) { /* the content moves on to make room for a longer length */
        if (reserve(b, vn - 1) != 0)
            return;
        memmove(b->p + at + vn - 1, b->p + at, len);
        b->n += vn - 1;
    }
    memcpy(b->p + at - 1, v, vn);
}

int pb_flush_as(pb_buf *b, unsigned field, FILE *f)
{
    if (b->failed)
        return -1;
    unsigned char head[12];
    size_t hn = varint_to(head, (uint64_t)field << 3 | WIRE_LEN);
    hn += varint_to(head + hn, b->n);
    int rc = fwrite(head, 1, hn, f) == hn && fwrite(b->p, 1, b->n, f) == b->n ? 0 : -1;
    b->n = 0;
    return rc;
}

void pb_free(pb_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}
