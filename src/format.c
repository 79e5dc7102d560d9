/* Text chores that messages, reports and traces share, each written once: sizes for people,
 * JSON strings, file names with %p, the version string. Without allocation (but gpumem__utf8_valid_dup, for the
 * tools' JSON library), stdio or floating point: the exit-time report uses them from a signal
 * handler (sigsafe.h). */
#include <stdlib.h>
#include <string.h>

#include "gpumem.h"
#include "format.h"

__extension__ typedef unsigned __int128 u128;

char *gpumem__fmt_u64(uint64_t v, char *buf)
{
    char tmp[21];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (int i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return buf;
}

/* The text printf("%.1f %s") gives for bytes / 1024^unit: one decimal, rounded half to even as
 * printf rounds an exact tie. */
char *gpumem_format_bytes(uint64_t bytes, char *buf, size_t n)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (!buf || n == 0)
        return buf;
    char text[48];
    size_t o = 0;
    if (bytes < 1024) {
        gpumem__fmt_u64(bytes, text);
        while (text[o])
            o++;
        text[o++] = ' ';
        text[o++] = 'B';
    } else {
        int u = 0;
        u128 unit = 1;
        while (u < 6 && bytes / unit >= 1024) {
            unit *= 1024;
            u++;
        }
        /* Never "1024.0 KiB" after rounding up: at 1023.95 units or more, take the next. */
        if (u < 6 && (u128)bytes * 20 >= unit * 20479) {
            unit *= 1024;
            u++;
        }
        u128 scaled = (u128)bytes * 10;
        uint64_t tenths = (uint64_t)(scaled / unit);
        u128 rest = scaled % unit;
        if (rest * 2 > unit || (rest * 2 == unit && (tenths & 1)))
            tenths++;
        gpumem__fmt_u64(tenths / 10, text);
        while (text[o])
            o++;
        text[o++] = '.';
        text[o++] = (char)('0' + tenths % 10);
        text[o++] = ' ';
        for (const char *c = units[u]; *c; c++)
            text[o++] = *c;
    }
    text[o] = '\0';
    size_t i = 0;
    for (; i + 1 < n && text[i]; i++)
        buf[i] = text[i];
    buf[i] = '\0';
    return buf;
}

/* ---- JSON strings ----
 *
 * Every JSON string gpumem writes (traces, reports, gpumem check's crash report) goes through
 * gpumem__json_piece, so that one rule holds everywhere: the text is valid UTF-8 whatever the
 * bytes were. Command lines, file names and __FILE__ are bytes, not necessarily UTF-8 (a
 * Latin-1 file name, an argument cut short); a JSON reader refuses the whole document for one
 * bad byte. Each invalid sequence (its longest valid beginning, as Unicode recommends) becomes
 * U+FFFD, written as its escape so that the output stays ASCII there. */

/* The length of the UTF-8 sequence that byte c begins, or 0 when no sequence begins so. */
static size_t utf8_lead_length(unsigned char c)
{
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return 2;
    if (c >= 0xE0 && c <= 0xEF)
        return 3;
    if (c >= 0xF0 && c <= 0xF4)
        return 4;
    return 0; /* a continuation byte, an overlong lead (C0, C1) or beyond U+10FFFF */
}

/* Whether c may follow lead as the sequence's second byte: no overlong forms, no UTF-16
 * surrogates (ED A0..BF), nothing above U+10FFFF. */
static int utf8_second_ok(unsigned char lead, unsigned char c)
{
    unsigned char lo = 0x80, hi = 0xBF;
    if (lead == 0xE0)
        lo = 0xA0;
    else if (lead == 0xED)
        hi = 0x9F;
    else if (lead == 0xF0)
        lo = 0x90;
    else if (lead == 0xF4)
        hi = 0x8F;
    return c >= lo && c <= hi;
}

/* The length of the valid UTF-8 sequence at u; 0 when it is not one, with *took the invalid
 * sequence's valid beginning (at least its first byte). */
static size_t utf8_sequence(const unsigned char *u, size_t *took)
{
    size_t len = utf8_lead_length(u[0]), i = 1;
    while (len && i < len && (i == 1 ? utf8_second_ok(u[0], u[i]) : (u[i] & 0xC0) == 0x80))
        i++;
    *took = i;
    return len && i == len ? len : 0;
}

char *gpumem__utf8_valid_dup(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *o = out; /* an invalid byte becomes three */
    if (!out)
        return NULL;
    for (const unsigned char *u = (const unsigned char *)s; *u;) {
        size_t took, len = utf8_sequence(u, &took);
        if (len) {
            memcpy(o, u, len);
            o += len;
        } else {
            memcpy(o, "\xEF\xBF\xBD", 3); /* U+FFFD */
            o += 3;
        }
        u += took;
    }
    *o = '\0';
    return out;
}

size_t gpumem__json_piece(const char *s, char out[GPUMEM__JSON_PIECE_MAX], size_t *took)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t len = utf8_lead_length(u[0]);
    if (len == 1) {
        *took = 1;
        if (u[0] == '"' || u[0] == '\\') {
            out[0] = '\\';
            out[1] = (char)u[0];
            return 2;
        }
        if (u[0] < 0x20) {
            memcpy(out, "\\u00", 4);
            out[4] = hex[u[0] >> 4];
            out[5] = hex[u[0] & 15];
            return 6;
        }
        out[0] = (char)u[0];
        return 1;
    }
    if (utf8_sequence(u, took)) {
        memcpy(out, s, *took);
        return *took;
    }
    memcpy(out, "\\ufffd", 6); /* *took: the invalid sequence's valid beginning */
    return 6;
}

/* ---- text for a terminal ----
 *
 * Text from outside (file names, source lines, environment values, names in a trace) may hold
 * control characters: a newline makes a line of its own, ESC and CSI start sequences that a
 * terminal obeys (move the cursor, retitle the window, hide what follows). The C0 controls
 * and DEL, and the C1 controls (U+0080 to U+009F in UTF-8, and bytes 0x80 to 0x9F that begin
 * no UTF-8 sequence, which an 8-bit terminal takes for C1 itself) are written as escapes;
 * other bytes, valid UTF-8 or not (a Latin-1 name), as they are. */
size_t gpumem__visible_piece(const char *s, char out[GPUMEM__VISIBLE_PIECE_MAX], size_t *took)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t len = 1;
    *took = 1;
    if (u[0] == '\n' || u[0] == '\t') {
        out[0] = '\\';
        out[1] = u[0] == '\n' ? 'n' : 't';
        return 2;
    }
    int control = u[0] < 0x20 || u[0] == 0x7f || (u[0] >= 0x80 && u[0] <= 0x9f);
    if (u[0] == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f) {
        control = 1;
        *took = len = 2;
    } else if (u[0] >= 0x80 && !control && utf8_sequence(u, took)) {
        memcpy(out, s, *took);
        return *took;
    } else if (u[0] >= 0x80) {
        *took = 1; /* not UTF-8: a byte at a time */
    }
    if (!control) {
        out[0] = s[0];
        return 1;
    }
    for (size_t i = 0; i < len; i++) {
        memcpy(out + 4 * i, "\\x", 2);
        out[4 * i + 2] = hex[u[i] >> 4];
        out[4 * i + 3] = hex[u[i] & 15];
    }
    return 4 * len;
}

size_t gpumem__visible(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    char piece[GPUMEM__VISIBLE_PIECE_MAX];
    for (size_t took; s && *s && cap; s += took) {
        size_t n = gpumem__visible_piece(s, piece, &took);
        if (o + n >= cap)
            break;
        memcpy(out + o, piece, n);
        o += n;
    }
    if (cap)
        out[o] = '\0';
    return o;
}

size_t gpumem__utf8_whole(const char *s, size_t len)
{
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned char c = (unsigned char)s[len - back];
        if ((c & 0xC0) == 0x80)
            continue; /* a continuation byte: its lead is further back */
        size_t need = c >= 0xC0 ? utf8_lead_length(c) : 1;
        return need > back ? len - back : len;
    }
    return len;
}

/* ---- file names ---- */

size_t gpumem__path_expand(const char *pattern, long pid, int add_pid, char *out, size_t cap)
{
    char digits[21];
    gpumem__fmt_u64((uint64_t)pid, digits);
    size_t need = 0, dn = strlen(digits);
    int has_pid = 0;
    for (const char *c = pattern; *c; c++, need++)
        if (c[0] == '%' && c[1] == 'p') {
            need += dn - 1;
            has_pid = 1;
            c++;
        }
    int suffix = add_pid && !has_pid;
    need += suffix ? 1 + dn : 0;
    if (need >= cap) {
        if (cap)
            out[0] = '\0';
        return need;
    }
    size_t o = 0;
    for (const char *c = pattern; *c; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            memcpy(out + o, digits, dn);
            o += dn;
            c++;
        } else {
            out[o++] = *c;
        }
    }
    if (suffix) {
        out[o++] = '.';
        memcpy(out + o, digits, dn);
        o += dn;
    }
    out[o] = '\0';
    return need;
}

const char *gpumem_version(void)
{
#define GPUMEM__STR2(x) #x
#define GPUMEM__STR(x) GPUMEM__STR2(x)
    return GPUMEM__STR(GPUMEM_VERSION_MAJOR) "." GPUMEM__STR(GPUMEM_VERSION_MINOR) "." GPUMEM__STR(
        GPUMEM_VERSION_PATCH);
}
