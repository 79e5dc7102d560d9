/* Runs a libFuzzer harness's LLVMFuzzerTestOneInput on every file of the folders given, once,
 * without libFuzzer: the regression inputs run in every test build. A folder that does not
 * exist is skipped (git keeps no empty crash folder); exits 1 when a folder cannot be read or
 * no file at all was replayed (a test that replays nothing proves nothing). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    size_t files = 0;
    for (int i = 1; i < argc; i++) {
        DIR *d = opendir(argv[i]);
        if (!d && errno == ENOENT)
            continue; /* a crash folder exists only once the fuzzer has found something */
        if (!d) {
            perror(argv[i]);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            struct stat st;
            if (e->d_name[0] == '.' || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
                continue;
            FILE *f = fopen(path, "rb");
            if (!f)
                continue;
            uint8_t *buf = malloc((size_t)st.st_size + 1);
            size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
            fclose(f);
            if (buf)
                LLVMFuzzerTestOneInput(buf, n);
            free(buf);
            files++;
        }
        closedir(d);
    }
    printf("replayed %zu inputs\n", files);
    return files ? 0 : 1;
}
