/* Prints "WIDTH HEIGHT NONWHITE COLORED PEAKRED" for a PNG: its size, the pixels that are not
 * (near) white, those that are saturated colour (the chart's fills), and those of the peak
 * marker's red (#c8102e), so that a test can tell a drawn page from a blank one. */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: png_stats FILE.png\n");
        return 2;
    }
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&img, argv[1])) {
        fprintf(stderr, "png_stats: %s: %s\n", argv[1], img.message);
        return 1;
    }
    img.format = PNG_FORMAT_RGB;
    png_bytep px = malloc(PNG_IMAGE_SIZE(img));
    if (!px || !png_image_finish_read(&img, NULL, px, 0, NULL)) {
        fprintf(stderr, "png_stats: %s: %s\n", argv[1], img.message);
        return 1;
    }
    unsigned long nonwhite = 0, colored = 0, red = 0;
    for (size_t i = 0; i < (size_t)img.width * img.height; i++) {
        int r = px[3 * i], g = px[3 * i + 1], b = px[3 * i + 2];
        int hi = r > g ? (r > b ? r : b) : (g > b ? g : b);
        int lo = r < g ? (r < b ? r : b) : (g < b ? g : b);
        nonwhite += lo < 235;
        colored += hi - lo > 60;
        red += abs(r - 0xc8) < 24 && abs(g - 0x10) < 24 && abs(b - 0x2e) < 24;
    }
    printf("%u %u %lu %lu %lu\n", img.width, img.height, nonwhite, colored, red);
    free(px);
    return 0;
}
