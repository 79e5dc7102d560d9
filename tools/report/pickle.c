/* Python's pickle format, protocol 2 (pickle.h). Each opcode is a byte, then its argument:
 * integers little-endian, text as UTF-8 with its length in four bytes. */
#include "pickle.h"

#include <stdlib.h>
#include <string.h>

#include "sigsafe.h" /* gpumem__utf8_valid_dup */

enum {
    OP_PROTO = 0x80,
    OP_STOP = '.',
    OP_MARK = '(',
    OP_EMPTY_DICT = '}',
    OP_EMPTY_LIST = ']',
    OP_BININT = 'J',
    OP_BININT1 = 'K',
    OP_BININT2 = 'M',
    OP_LONG1 = 0x8a,
    OP_BINUNICODE = 'X',
    OP_NEWFALSE = 0x89,
    OP_TUPLE2 = 0x86,
    OP_LONG_BINPUT = 'r',
    OP_BINGET = 'h',
    OP_LONG_BINGET = 'j',
};

static void put_u32(FILE *f, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    fwrite(b, 1, 4, f);
}

void pickle_start(pickle_out *p, FILE *f)
{
    memset(p, 0, sizeof *p);
    p->f = f;
    putc(OP_PROTO, f);
    putc(2, f);
}

void pickle_stop(pickle_out *p)
{
    putc(OP_STOP, p->f);
}

static uint32_t begin(pickle_out *p, int op)
{
    uint32_t saved = p->items;
    putc(op, p->f);
    putc(OP_MARK, p->f);
    p->items = 0;
    return saved;
}

uint32_t pickle_dict(pickle_out *p)
{
    return begin(p, OP_EMPTY_DICT);
}

uint32_t pickle_list(pickle_out *p)
{
    return begin(p, OP_EMPTY_LIST);
}

void pickle_item(pickle_out *p, char close)
{
    if (++p->items < PICKLE_BATCH)
        return;
    putc(close, p->f);
    putc(OP_MARK, p->f);
    p->items = 0;
}

void pickle_end(pickle_out *p, char close, uint32_t saved)
{
    putc(close, p->f);
    p->items = saved;
}

void pickle_int(pickle_out *p, int64_t v)
{
    FILE *f = p->f;
    if (v >= 0 && v < 256) {
        putc(OP_BININT1, f);
        putc((int)v, f);
    } else if (v >= 0 && v < 65536) {
        putc(OP_BININT2, f);
        putc((int)(v & 0xff), f);
        putc((int)(v >> 8), f);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        putc(OP_BININT, f);
        put_u32(f, (uint32_t)(int32_t)v);
    } else {
        /* LONG1: the fewest bytes of two's complement that keep the sign. */
        unsigned char b[8];
        uint64_t u = (uint64_t)v;
        int n = 8;
        for (int i = 0; i < 8; i++)
            b[i] = (unsigned char)(u >> (8 * i));
        while (n > 1 && ((b[n - 1] == 0 && !(b[n - 2] & 0x80)) ||
                         (b[n - 1] == 0xff && (b[n - 2] & 0x80))))
            n--;
        putc(OP_LONG1, f);
        putc(n, f);
        fwrite(b, 1, (size_t)n, f);
    }
}

void pickle_uint(pickle_out *p, uint64_t v)
{
    if (v <= INT64_MAX) {
        pickle_int(p, (int64_t)v);
        return;
    }
    /* Nine bytes: the eight of the value and a zero that keeps it positive. */
    putc(OP_LONG1, p->f);
    putc(9, p->f);
    for (int i = 0; i < 8; i++)
        putc((int)((v >> (8 * i)) & 0xff), p->f);
    putc(0, p->f);
}

void pickle_text(pickle_out *p, const char *s)
{
    /* Python refuses the whole file for one byte that is not UTF-8: such bytes (a trace is
     * written valid, but need not be read so) become U+FFFD. */
    char *valid = gpumem__utf8_valid_dup(s ? s : "");
    const char *t = valid ? valid : "?";
    size_t n = strlen(t);
    putc(OP_BINUNICODE, p->f);
    put_u32(p->f, (uint32_t)n);
    fwrite(t, 1, n, p->f);
    free(valid);
}

void pickle_false(pickle_out *p)
{
    putc(OP_NEWFALSE, p->f);
}

uint32_t pickle_keep(pickle_out *p)
{
    putc(OP_LONG_BINPUT, p->f);
    put_u32(p->f, p->memo);
    return p->memo++;
}

void pickle_again(pickle_out *p, uint32_t slot)
{
    if (slot < 256) {
        putc(OP_BINGET, p->f);
        putc((int)slot, p->f);
    } else {
        putc(OP_LONG_BINGET, p->f);
        put_u32(p->f, slot);
    }
}

void pickle_tuple2(pickle_out *p)
{
    putc(OP_TUPLE2, p->f);
}
