/* Which translation units to analyze, and with which flags: paths on the command line
 * (folders walked recursively), or a compilation database whose compile commands (gcc,
 * clang or nvcc) are translated into the flags that matter to Clang's analysis. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

/** Folders nested deeper than this are reported, not walked (a loop of bind mounts, or a
 *  generated tree gone wrong). */
#define LINT_MAX_DEPTH 256

/** @p abs relative to folder @p dir when it is under it, else NULL (no allocation). */
static const char *under(const char *abs, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return abs + 1;
    if (strncmp(abs, dir, n) == 0 && abs[n] == '/')
        return abs + n + 1;
    return NULL;
}

char *lint_path_display(const char *abs)
{
    char cwd[4096];
    if (abs[0] == '/' && getcwd(cwd, sizeof cwd)) {
        const char *rel = under(abs, cwd);
        if (rel && *rel)
            return strdup(rel);
    }
    return strdup(abs);
}

int lint_excluded(const struct lint_options *o, const char *abs)
{
    if (!o->exclude.n)
        return 0;
    char *shown = lint_path_display(abs);
    const char *rel = o->config_dir ? under(abs, o->config_dir) : NULL;
    int hit = 0;
    for (size_t i = 0; i < o->exclude.n && !hit; i++) {
        const char *pat = o->exclude.v[i];
        /* A pattern written "./src/x" means "src/x". */
        while (pat[0] == '.' && pat[1] == '/')
            pat += 2;
        hit = fnmatch(pat, abs, 0) == 0 || (shown && fnmatch(pat, shown, 0) == 0) ||
              (rel && fnmatch(pat, rel, 0) == 0);
    }
    free(shown);
    return hit;
}

const char *lint_unit_lang(const char *name)
{
    const char *slash = strrchr(name, '/');
    const char *dot = strrchr(slash ? slash : name, '.');
    if (!dot)
        return "c++";
    static const char *const headers[] = {".h", ".cuh", ".hpp", ".hh", ".hxx", ".inl", ".inc",
                                          ".H", ".tcc", NULL};
    for (size_t i = 0; headers[i]; i++)
        if (strcmp(dot, headers[i]) == 0)
            return NULL;
    if (strcmp(dot, ".cu") == 0)
        return "cuda";
    if (strcmp(dot, ".c") == 0)
        return "c";
    return "c++";
}

void lint_unit_free(struct lint_unit *x)
{
    free(x->path);
    free(x->abs);
    free(x->lang);
    free(x->skip);
    free(x->as_cuda);
    lint_strlist_free(&x->args);
}

void lint_units_free(struct lint_units *u)
{
    for (size_t i = 0; i < u->n; i++)
        lint_unit_free(&u->v[i]);
    free(u->v);
    lint_strlist_free(&u->headers);
    lint_strlist_free(&u->skipped);
    lint_strlist_free(&u->roots);
    memset(u, 0, sizeof *u);
}

static struct lint_unit *unit_add(struct lint_units *u, const char *abs, const char *lang)
{
    struct lint_unit *v = lint_array_grow(u->v, u->n, &u->cap, sizeof *v);
    if (!v)
        return NULL;
    u->v = v;
    struct lint_unit *x = &u->v[u->n];
    memset(x, 0, sizeof *x);
    x->abs = strdup(abs);
    x->path = lint_path_display(abs);
    x->lang = strdup(lang);
    if (!x->abs || !x->path || !x->lang) {
        free(x->abs);
        free(x->path);
        free(x->lang);
        return NULL;
    }
    u->n++;
    return x;
}

static void skip_note(struct lint_units *u, const char *abs, const char *why)
{
    char *shown = lint_path_display(abs);
    size_t n = strlen(shown ? shown : abs) + strlen(why) + 3;
    char *msg = malloc(n);
    if (msg) {
        snprintf(msg, n, "%s: %s", shown ? shown : abs, why);
        lint_strlist_add(&u->skipped, msg);
        free(msg);
    }
    free(shown);
}

static int has_extension(const struct lint_options *o, const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && lint_strlist_has(&o->extensions, dot, strlen(dot));
}

/** Takes one regular file found in a folder or named on the command line. */
static void take_file(const char *abs, struct lint_units *u, int named)
{
    const char *lang = lint_unit_lang(abs);
    if (!lang && !named) {
        lint_strlist_add(&u->headers, abs);
        return;
    }
    /* A header named on the command line is analyzed on its own, as the language its
     * extension suggests. */
    if (!lang) {
        const char *dot = strrchr(abs, '.');
        lang = dot && strcmp(dot, ".cuh") == 0 ? "cuda" : "c++";
        lint_strlist_add(&u->headers, abs);
    }
    struct lint_unit *x = unit_add(u, abs, lang);
    if (x)
        x->named = named;
}

static void walk_dir(const struct lint_options *o, const char *dir, struct lint_units *u,
                     int depth)
{
    if (depth > LINT_MAX_DEPTH) {
        char why[96];
        snprintf(why, sizeof why, "folder nested deeper than %d levels, not walked",
                 LINT_MAX_DEPTH);
        skip_note(u, dir, why);
        return;
    }
    DIR *d = opendir(dir);
    if (!d) {
        char why[160];
        snprintf(why, sizeof why, "cannot open folder: %s", strerror(errno));
        skip_note(u, dir, why);
        return;
    }
    struct lint_strlist names = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        /* Hidden entries (.git, .cache) are never source worth analyzing. */
        if (e->d_name[0] == '.')
            continue;
        lint_strlist_add(&names, e->d_name);
    }
    closedir(d);
    if (names.n)
        qsort(names.v, names.n, sizeof *names.v, lint_str_cmp);
    size_t dl = strlen(dir);
    for (size_t i = 0; i < names.n; i++) {
        size_t len = dl + strlen(names.v[i]) + 2;
        char *path = malloc(len);
        if (!path)
            break;
        snprintf(path, len, "%s%s%s", dir, dir[dl - 1] == '/' ? "" : "/", names.v[i]);
        struct stat st;
        if (lint_excluded(o, path) || lstat(path, &st) != 0) {
            free(path);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            walk_dir(o, path, u, depth + 1);
        } else if (has_extension(o, names.v[i])) {
            /* A link to a file is followed; a link to a folder is not walked (it may loop). */
            struct stat target;
            int ok = S_ISREG(st.st_mode) ||
                     (S_ISLNK(st.st_mode) && stat(path, &target) == 0 && S_ISREG(target.st_mode));
            if (ok)
                take_file(path, u, 0);
            else if (!S_ISLNK(st.st_mode))
                skip_note(u, path, "not a regular file (a FIFO, socket or device)");
        }
        free(path);
    }
    lint_strlist_free(&names);
}

int lint_collect_path(const struct lint_options *o, const char *path, struct lint_units *u)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "gpumem lint: error: %s: %s (name an existing file or folder)\n", path,
                strerror(errno));
        return -1;
    }
    char *abs = lint_path_absolute(path);
    if (!abs)
        return -1;
    if (S_ISDIR(st.st_mode)) {
        lint_strlist_add(&u->roots, abs);
        if (!lint_excluded(o, abs))
            walk_dir(o, abs, u, 0);
    } else if (!lint_excluded(o, abs)) {
        /* The file's folder counts as a root for deriving flags (its include/ folder), but
         * is not walked. */
        char *slash = strrchr(abs, '/');
        if (slash && slash != abs) {
            *slash = '\0';
            if (!lint_strlist_has(&u->roots, abs, strlen(abs)))
                lint_strlist_add(&u->roots, abs);
            *slash = '/';
        }
        if (S_ISREG(st.st_mode))
            take_file(abs, u, 1);
        else
            skip_note(u, abs, "not a regular file (a FIFO, socket or device)");
    }
    free(abs);
    return 0;
}

int lint_shell_split(const char *s, struct lint_strlist *out)
{
    size_t n = strlen(s);
    char *w = malloc(n + 1);
    if (!w)
        return -1;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (!*p)
            break;
        size_t k = 0;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            if (*p == '\'') {
                p++;
                while (*p && *p != '\'')
                    w[k++] = *p++;
                if (*p)
                    p++;
            } else if (*p == '"') {
                p++;
                while (*p && *p != '"') {
                    if (*p == '\\' && (p[1] == '"' || p[1] == '\\' || p[1] == '$' || p[1] == '`'))
                        p++;
                    w[k++] = *p++;
                }
                if (*p)
                    p++;
            } else if (*p == '\\' && p[1]) {
                w[k++] = p[1];
                p += 2;
            } else {
                w[k++] = *p++;
            }
        }
        if (lint_strlist_addn(out, w, k) != 0) {
            free(w);
            return -1;
        }
    }
    free(w);
    return 0;
}

/** @p arg made absolute against @p dir when relative. */
static void add_path_flag(struct lint_strlist *out, const char *flag, const char *arg,
                          const char *dir)
{
    lint_strlist_add(out, flag);
    if (arg[0] == '/' || !dir || !*dir) {
        lint_strlist_add(out, arg);
        return;
    }
    size_t n = strlen(dir) + strlen(arg) + 2;
    char *j = malloc(n);
    if (!j)
        return;
    snprintf(j, n, "%s/%s", dir, arg);
    char *norm = lint_path_normalize(j);
    lint_strlist_add(out, norm ? norm : j);
    free(norm);
    free(j);
}

static const char *basename_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/** Whether @p a is the long option @p name of nvcc ("--name=V", or "--name" with V the next
 *  argument, which is then taken): 1 with *@p v its value (NULL when there is none). */
static int long_option(const char *a, const char *name, const char *next, size_t *i,
                       const char **v)
{
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0 || (a[n] != '\0' && a[n] != '='))
        return 0;
    *v = a[n] == '=' ? a + n + 1 : next;
    if (*v == next)
        (*i)++;
    return 1;
}

/** The include paths (-I and its kin, nvcc's long spellings of them); 1 when @p a was one. */
static int translate_include(const char *a, const char *next, size_t *i, const char *dir,
                             int nvcc, struct lint_strlist *out)
{
    static const char *const path_flags[] = {"-I", "-isystem", "-iquote", "-idirafter",
                                             "-include", NULL};
    for (size_t k = 0; path_flags[k]; k++) {
        size_t n = strlen(path_flags[k]);
        if (strncmp(a, path_flags[k], n) != 0)
            continue;
        /* -Idir, -I dir, -isystemdir and -isystem dir all occur. */
        const char *v = a + n;
        if (!*v) {
            if (!next)
                return 1;
            v = next;
            (*i)++;
        }
        add_path_flag(out, path_flags[k], v, dir);
        return 1;
    }
    const char *v;
    if (nvcc && long_option(a, "--include-path", next, i, &v)) {
        if (v)
            add_path_flag(out, "-I", v, dir);
        return 1;
    }
    if (nvcc && long_option(a, "--system-include", next, i, &v)) {
        if (v)
            add_path_flag(out, "-isystem", v, dir);
        return 1;
    }
    return 0;
}

/** The macros (-D, -U, nvcc's --define-macro); 1 when @p a was one. */
static int translate_macro(const char *a, const char *next, size_t *i, int nvcc,
                           struct lint_strlist *out)
{
    if ((a[0] == '-' && (a[1] == 'D' || a[1] == 'U'))) {
        if (a[2]) {
            lint_strlist_add(out, a);
        } else if (next) {
            char f[3] = {'-', a[1], '\0'};
            lint_strlist_add(out, f);
            lint_strlist_add(out, next);
            (*i)++;
        }
        return 1;
    }
    const char *v;
    if (nvcc && long_option(a, "--define-macro", next, i, &v)) {
        if (v) {
            lint_strlist_add(out, "-D");
            lint_strlist_add(out, v);
        }
        return 1;
    }
    return 0;
}

/** The language and its standard (-std, -x); 1 when @p a was one of them. */
static int translate_language(const char *a, const char *next, size_t *i,
                              struct lint_strlist *out, const char **lang)
{
    char f[64];
    if (strncmp(a, "-std=", 5) == 0 || strncmp(a, "--std=", 6) == 0) {
        snprintf(f, sizeof f, "-std=%s", a + (a[1] == '-' ? 6 : 5));
        lint_strlist_add(out, f);
        return 1;
    }
    if ((strcmp(a, "-std") == 0 || strcmp(a, "--std") == 0) && next) {
        snprintf(f, sizeof f, "-std=%s", next);
        lint_strlist_add(out, f);
        (*i)++;
        return 1;
    }
    const char *v;
    if (strcmp(a, "-x") == 0) {
        v = next;
        (*i)++;
    } else if (!long_option(a, "--x", next, i, &v)) {
        return 0;
    }
    if (v)
        *lang = strcmp(v, "cu") == 0 || strcmp(v, "cuda") == 0 ? "cuda"
                : strcmp(v, "c") == 0                          ? "c"
                                                               : "c++";
    return 1;
}

static void translate_one(char **argv, size_t argc, size_t *i, const char *dir, int nvcc,
                          struct lint_strlist *out, const char **lang);

/** nvcc's -Xcompiler / --compiler-options: the host compiler's flags, a comma-separated
 *  list; the kinds kept are kept from it too (nvcc passes -I and -D to both anyway). 1 when
 *  @p a was one. */
static int translate_host_flags(const char *a, const char *next, size_t *i, const char *dir,
                                int nvcc, struct lint_strlist *out, const char **lang)
{
    const char *v;
    if (!nvcc || !(long_option(a, "-Xcompiler", next, i, &v) ||
                   long_option(a, "--compiler-options", next, i, &v)))
        return 0;
    if (!v)
        return 1;
    struct lint_strlist host = {0};
    for (const char *p = v; *p;) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n)
            lint_strlist_addn(&host, p, n);
        p += n + (c ? 1 : 0);
    }
    for (size_t k = 0; k < host.n; k++)
        translate_one(host.v, host.n, &k, dir, 0, out, lang);
    lint_strlist_free(&host);
    return 1;
}

/* Everything else (code generation, optimization, warnings, nvcc's -arch, -gencode, -ccbin,
 * -Xptxas, -forward-unknown-to-host-compiler, -o, -c ...) does not change what the analyzer
 * sees. Options of nvcc and gcc that take a separate value swallow it. */
static const char *const with_value[] = {
    "-o", "-arch", "--gpu-architecture", "-code", "--gpu-code", "-gencode",
    "--generate-code", "-ccbin", "--compiler-bindir", "-Xptxas", "--ptxas-options",
    "-Xlinker", "--linker-options", "-Xnvlink", "--nvlink-options", "-Xarchive",
    "--archive-options", "-maxrregcount", "--maxrregcount", "-MF", "-MT", "-MQ", "-odir",
    "--output-directory", "--options-file", "-optf", "-t", "--threads", "-Xcudafe",
    "--default-stream", "-ldir", "--library-path", "-l", "--library", "-rdc",
    "--relocatable-device-code", "--diag-suppress", "-diag-suppress", "--expt-extended-lambda",
    NULL};

/** One flag (and maybe its value at argv[*i + 1]) of a compile command, translated for clang
 *  into @p out; @p nvcc says that the command is nvcc's. */
static void translate_one(char **argv, size_t argc, size_t *i, const char *dir, int nvcc,
                          struct lint_strlist *out, const char **lang)
{
    const char *a = argv[*i];
    const char *next = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (translate_include(a, next, i, dir, nvcc, out) || translate_macro(a, next, i, nvcc, out) ||
        translate_language(a, next, i, out, lang))
        return;
    if (strcmp(a, "-fopenmp") == 0 || strcmp(a, "-pthread") == 0 ||
        strcmp(a, "-fno-exceptions") == 0 || strcmp(a, "-fexceptions") == 0 ||
        strcmp(a, "-m32") == 0 || strcmp(a, "-m64") == 0) {
        lint_strlist_add(out, a);
        return;
    }
    if (translate_host_flags(a, next, i, dir, nvcc, out, lang))
        return;
    for (size_t k = 0; with_value[k]; k++)
        if (strcmp(a, with_value[k]) == 0) {
            /* -rdc and --expt-extended-lambda take "true" or nothing; the others a value. */
            if (next && (next[0] != '-' || strcmp(a, "-o") == 0) &&
                !(strcmp(a, "--expt-extended-lambda") == 0))
                (*i)++;
            return;
        }
}

void lint_translate_args(char **argv, size_t argc, const char *dir, struct lint_strlist *out,
                         const char **lang)
{
    if (argc == 0)
        return;
    const char *cc = basename_of(argv[0]);
    int nvcc = strstr(cc, "nvcc") != NULL;
    for (size_t i = 1; i < argc; i++)
        translate_one(argv, argc, &i, dir, nvcc, out, lang);
}

/** A set of strings for de-duplication: open addressing on FNV-1a, grown at half full, so
 *  200 000 entries cost 200 000 hash look-ups. */
struct strset {
    const char **slot;
    uint64_t *hash;
    size_t cap, n;
};

static int strset_insert(struct strset *s, const char *key)
{
    if (s->n * 2 >= s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        const char **slot = calloc(cap, sizeof *slot);
        uint64_t *hash = calloc(cap, sizeof *hash);
        if (!slot || !hash) {
            free(slot);
            free(hash);
            return -1;
        }
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i]) {
                size_t j = (size_t)s->hash[i] & (cap - 1);
                while (slot[j])
                    j = (j + 1) & (cap - 1);
                slot[j] = s->slot[i];
                hash[j] = s->hash[i];
            }
        free(s->slot);
        free(s->hash);
        s->slot = slot;
        s->hash = hash;
        s->cap = cap;
    }
    uint64_t h = lint_fnv(LINT_FNV_SEED, key, strlen(key));
    size_t j = (size_t)h & (s->cap - 1);
    while (s->slot[j]) {
        if (s->hash[j] == h && strcmp(s->slot[j], key) == 0)
            return 0;
        j = (j + 1) & (s->cap - 1);
    }
    s->slot[j] = key;
    s->hash[j] = h;
    s->n++;
    return 1;
}

/** A compilation database's entries: the JSON array of its text, or NULL after saying why it
 *  is not one. */
static json_t *compdb_load(const char *text, size_t len, const char *name)
{
    json_error_t err;
    json_t *db = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!db) {
        fprintf(stderr, "gpumem lint: error: %s:%d: cannot read compilation database: %s\n",
                name, err.line, err.text);
        return NULL;
    }
    if (!json_is_array(db)) {
        fprintf(stderr,
                "gpumem lint: error: %s: a compilation database is a JSON array of "
                "{\"directory\", \"file\", \"arguments\" or \"command\"} objects\n",
                name);
        json_decref(db);
        return NULL;
    }
    return db;
}

/** The absolute path of an entry's @p file, taken against its @p dir when relative;
 *  malloc'd, or NULL when memory ran out. */
static char *entry_path(const char *file, const char *dir)
{
    size_t n = strlen(file) + (dir ? strlen(dir) : 0) + 2;
    char *joined = malloc(n);
    if (!joined)
        return NULL;
    if (file[0] == '/' || !dir || !*dir)
        snprintf(joined, n, "%s", file);
    else
        snprintf(joined, n, "%s/%s", dir, file);
    char *abs = lint_path_absolute(joined);
    free(joined);
    return abs;
}

/** The words of an entry's compile command: its "arguments", or its "command" split as sh
 *  splits it. */
static void entry_words(json_t *entry, struct lint_strlist *words)
{
    json_t *args = json_object_get(entry, "arguments");
    const char *command = json_string_value(json_object_get(entry, "command"));
    if (json_is_array(args)) {
        size_t k;
        json_t *a;
        json_array_foreach(args, k, a) if (json_is_string(a))
            lint_strlist_add(words, json_string_value(a));
    } else if (command) {
        lint_shell_split(command, words);
    }
}

/** Adds the unit of entry @p i, unless the options exclude it or an earlier entry named its
 *  file. Returns 0, or -1 when memory ran out. */
static int compdb_entry(const struct lint_options *o, json_t *entry, size_t i, const char *name,
                        struct strset *seen, struct lint_units *u)
{
    const char *file = json_string_value(json_object_get(entry, "file"));
    const char *dir = json_string_value(json_object_get(entry, "directory"));
    if (!file || !*file) {
        fprintf(stderr, "gpumem lint: warning: %s: entry %zu has no \"file\"; skipped\n", name,
                i);
        return 0;
    }
    char *abs = entry_path(file, dir);
    if (!abs)
        return -1;
    if (lint_excluded(o, abs)) {
        free(abs);
        return 0;
    }
    const char *lang = lint_unit_lang(abs);
    if (!lang)
        lang = "c++";
    struct lint_strlist words = {0}, flags = {0};
    entry_words(entry, &words);
    lint_translate_args(words.v, words.n, dir, &flags, &lang);
    lint_strlist_free(&words);
    struct lint_unit *x = unit_add(u, abs, lang);
    free(abs);
    if (!x) {
        lint_strlist_free(&flags);
        return -1;
    }
    x->args = flags;
    x->from_db = 1;
    /* The first entry of a file wins; later ones (the same file built twice) go. */
    int fresh = strset_insert(seen, x->abs);
    if (fresh < 0)
        return -1;
    if (!fresh) {
        u->n--;
        free(x->path);
        free(x->abs);
        free(x->lang);
        lint_strlist_free(&x->args);
    }
    return 0;
}

int lint_compdb_parse(const struct lint_options *o, const char *text, size_t len,
                      const char *name, struct lint_units *u)
{
    json_t *db = compdb_load(text, len, name);
    if (!db)
        return -1;
    struct strset seen = {0};
    size_t i;
    json_t *entry;
    int rc = 0;
    json_array_foreach(db, i, entry) {
        rc = compdb_entry(o, entry, i, name, &seen, u);
        if (rc != 0)
            break;
    }
    free(seen.slot);
    free(seen.hash);
    json_decref(db);
    if (rc != 0)
        fprintf(stderr, "gpumem lint: error: %s: out of memory\n", name);
    return rc;
}

int lint_collect_compdb(const struct lint_options *o, const char *path, struct lint_units *u)
{
    char *buf = NULL;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t n = strlen(path) + 32;
        buf = malloc(n);
        if (!buf)
            return -1;
        snprintf(buf, n, "%s/compile_commands.json", path);
        path = buf;
    }
    char *text, why_buf[256];
    size_t len;
    const char *why;
    int rc = -1;
    if (lint_read_file(path, (size_t)1 << 30, &text, &len, &why, why_buf, sizeof why_buf) != 0) {
        fprintf(stderr,
                "gpumem lint: error: cannot read compilation database %s: %s (configure with "
                "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON and pass the build folder)\n",
                path, why);
    } else {
        rc = lint_compdb_parse(o, text, len, path, u);
        free(text);
    }
    free(buf);
    return rc;
}
