/* Human-readable sizes for messages and reports, without allocation, stdio or floating point:
 * the exit-time report formats sizes from a signal handler (sigsafe.h). */
#include "gpumem.h"
#include "sigsafe.h"

__extension__ typedef unsigned __int128 u128;

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
