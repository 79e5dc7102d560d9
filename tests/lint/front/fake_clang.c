/* A stand-in for `clang++-22 --analyze` that the front-end tests run with --clang: it
 * writes the SARIF that clang would, with results described by `FAKE:` comments in the
 * analyzed file, so every behaviour of the front end can be tested without the plugin.
 *
 *   FAKE: gpumem.NeverReleased [at=FILE:LINE] [alloc=LINE] [hash=H] [level=note] MESSAGE
 *       a result at the comment's line (or FILE:LINE, relative to the unit's folder), with
 *       an "allocated here with cudaMalloc" step at LINE and a path of three steps
 *   FAKE: error TEXT      clang's "FILE:LINE:1: error: TEXT" on stderr, exit 1, no SARIF
 *   FAKE: hang            sleeps (for --timeout)
 *   FAKE: crash           abort()
 *   FAKE: noplugin        "error: unable to load plugin ..." and exit 1
 *
 * Without hash=, the issue hash is made from the checker, the message and the text of the
 * result's line, never its number, as clang's is. With FAKE_CLANG_LOG set, each command line
 * is appended to that file (one line, arguments separated by spaces). */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    size_t r;
    while (b && (r = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 >= cap)
            b = realloc(b, cap *= 2);
    }
    fclose(f);
    if (b)
        b[n] = '\0';
    *len = n;
    return b;
}

/** Line @p want (1-based; LF, CRLF and CR end lines) of @p text, trimmed, into @p out. */
static void line_text(const char *text, size_t len, unsigned want, char *out, size_t cap)
{
    unsigned line = 1;
    size_t i = 0;
    while (i < len && line < want) {
        if (text[i] == '\n' || text[i] == '\r') {
            if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
                i++;
            line++;
        }
        i++;
    }
    while (i < len && (text[i] == ' ' || text[i] == '\t'))
        i++;
    size_t k = 0;
    while (i < len && text[i] != '\n' && text[i] != '\r' && k + 1 < cap)
        out[k++] = text[i++];
    while (k && isspace((unsigned char)out[k - 1]))
        k--;
    out[k] = '\0';
}

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static void location(FILE *o, const char *file, unsigned line, unsigned col, const char *msg)
{
    fprintf(o, "{\"physicalLocation\":{\"artifactLocation\":{\"uri\":\"file://%s\"},"
               "\"region\":{\"startLine\":%u,\"startColumn\":%u}}",
            file, line, col);
    if (msg)
        fprintf(o, ",\"message\":{\"text\":\"%s\"}", msg);
    fputc('}', o);
}

int main(int argc, char **argv)
{
    const char *out = NULL, *file = argc > 1 ? argv[argc - 1] : NULL;
    const char *log = getenv("FAKE_CLANG_LOG");
    if (log) {
        FILE *l = fopen(log, "a");
        for (int i = 0; l && i < argc; i++)
            fprintf(l, "%s%s", i ? " " : "", argv[i]);
        if (l) {
            fputc('\n', l);
            fclose(l);
        }
    }
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "-o") == 0)
            out = argv[i + 1];
    if (!out || !file) {
        fprintf(stderr, "fake clang: needs -o FILE and a source file\n");
        return 2;
    }
    size_t len;
    char *text = slurp(file, &len);
    if (!text) {
        fprintf(stderr, "error: no such file or directory: '%s'\n", file);
        return 1;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    FILE *o = NULL;
    int results = 0;
    unsigned line = 1;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\n' || text[i] == '\r') {
            if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
                i++;
            line++;
            continue;
        }
        if (strncmp(text + i, "FAKE: ", 6) != 0)
            continue;
        char cmd[1024];
        size_t k = 0, j = i + 6;
        while (j < len && text[j] != '\n' && text[j] != '\r' && k + 1 < sizeof cmd)
            cmd[k++] = text[j++];
        cmd[k] = '\0';
        /* A comment's closing marker is not part of the command. */
        char *close = strstr(cmd, "*/");
        if (close)
            *close = '\0';
        if (strncmp(cmd, "error ", 6) == 0) {
            fprintf(stderr, "%s:%u:1: warning: something harmless\n%s:%u:1: error: %s\n1 error "
                            "generated.\n",
                    file, line, file, line, cmd + 6);
            return 1;
        }
        if (strncmp(cmd, "hang", 4) == 0) {
            sleep(1000);
            return 0;
        }
        if (strncmp(cmd, "crash", 5) == 0)
            abort();
        if (strncmp(cmd, "noplugin", 8) == 0) {
            fprintf(stderr, "error: unable to load plugin '/x/gpumem-analyzer.so': 'bad'\n");
            return 1;
        }
        char checker[128] = "", at[1024] = "", hash[128] = "", level[16] = "warning";
        unsigned alloc = 0;
        char *p = cmd;
        sscanf(p, "%127s", checker);
        p += strlen(checker);
        for (;;) {
            while (*p == ' ')
                p++;
            if (strncmp(p, "at=", 3) == 0)
                sscanf(p + 3, "%1023s", at);
            else if (strncmp(p, "alloc=", 6) == 0)
                alloc = (unsigned)atoi(p + 6);
            else if (strncmp(p, "hash=", 5) == 0)
                sscanf(p + 5, "%127s", hash);
            else if (strncmp(p, "level=", 6) == 0)
                sscanf(p + 6, "%15s", level);
            else
                break;
            while (*p && *p != ' ')
                p++;
        }
        char *msg = p;
        for (size_t m = strlen(msg); m && msg[m - 1] == ' ';)
            msg[--m] = '\0';
        char where[4200];
        unsigned wline = line;
        const char *wtext = text;
        size_t wlen = len;
        char *other = NULL;
        snprintf(where, sizeof where, "%s", file);
        if (at[0]) {
            char *colon = strrchr(at, ':');
            if (colon) {
                *colon = '\0';
                wline = (unsigned)atoi(colon + 1);
            }
            /* A path too long for where is not a file this stand-in can read. */
            int n = snprintf(where, sizeof where, "%s/%s", dir, at);
            other = n > 0 && (size_t)n < sizeof where ? slurp(where, &wlen) : NULL;
            wtext = other ? other : "";
        }
        if (!hash[0]) {
            char lt[1024];
            line_text(wtext, wlen, wline, lt, sizeof lt);
            uint64_t h = fnv(fnv(fnv(14695981039346656037ull, checker), msg), lt);
            snprintf(hash, sizeof hash, "%016llx", (unsigned long long)h);
        }
        free(other);
        if (!o) {
            o = fopen(out, "w");
            if (!o)
                return 3;
            fputs("{\"$schema\":\"x\",\"version\":\"2.1.0\",\"runs\":[{\"results\":[", o);
        }
        fprintf(o, "%s{\"ruleId\":\"%s\",\"level\":\"%s\",\"message\":{\"text\":\"%s\"},"
                   "\"locations\":[",
                results++ ? "," : "", checker, level, msg);
        location(o, where, wline, 5, NULL);
        fprintf(o, "],\"partialFingerprints\":{\"clang/issueHash/v1\":\"%s\"},"
                   "\"codeFlows\":[{\"threadFlows\":[{\"locations\":[",
                hash);
        if (alloc) {
            fputs("{\"importance\":\"essential\",\"location\":", o);
            location(o, file, alloc, 3, "allocated here with cudaMalloc");
            fputs("},", o);
        }
        fputs("{\"importance\":\"important\",\"location\":", o);
        location(o, file, line, 2, "Assuming 'flag' is not equal to 0");
        fputs("},{\"importance\":\"unimportant\",\"location\":", o);
        location(o, file, line, 2, "Taking true branch");
        fputs("},{\"importance\":\"essential\",\"location\":", o);
        location(o, where, wline, 5, msg);
        fputs("}]}]}]}", o);
    }
    if (!o) {
        o = fopen(out, "w");
        if (!o)
            return 3;
        fputs("{\"$schema\":\"x\",\"version\":\"2.1.0\",\"runs\":[{\"results\":[", o);
    }
    /* One of clang's own results, which the front end must drop. */
    fprintf(o, "%s{\"ruleId\":\"deadcode.DeadStores\",\"message\":{\"text\":\"dead\"},"
               "\"locations\":[",
            results ? "," : "");
    location(o, file, 1, 1, NULL);
    fputs("]}]}]}\n", o);
    fclose(o);
    free(text);
    return 0;
}
