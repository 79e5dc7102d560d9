/* Flags for units without a compilation database: the analyzer needs the include paths a
 * build would give. They are derived from the tree, and only for what the compiler could not
 * find otherwise: for each `#include "x.h"` that is not beside the including file, and each
 * `#include <x.h>`, that is neither in a folder of the user's flags (after `--`) nor a system
 * header, the folder under the walked roots that holds x.h (by its path's tail; the nearest to
 * the including file when several do), else in the include/ folder of a path given (or of a
 * named file's folder) or of a folder above it up to its repository's top, following the
 * headers found so to a depth of 16. A derived folder is searched after the user's, so it
 * never hides their headers or the system's: a Windows `unistd.h` shim somewhere in the tree
 * is not put before /usr/include/unistd.h, and a sample's copy of a helper header not before
 * the user's -I.
 * Headers of libraries that install outside the default path are found where the system's
 * packages put them (libraries[]): `omp.h`, which clang 22 does not ship without libomp, in
 * GCC's folder; `mpi.h` in MPI's (Debian's and Ubuntu's alternative, Fedora's, MPI_HOME). A source
 * file that another unit includes (`#include "kernels.cu"`) is analyzed through that unit, as
 * its build compiles it, not alone. The CUDA toolkit is found as scripts/setup finds it. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "lint_internal.h"

#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *lint_cuda_root(void)
{
    static char found[4096];
    static int done;
    if (done)
        return found[0] ? found : NULL;
    done = 1;
    const char *cands[] = {getenv("CUDAToolkit_ROOT"), getenv("CUDA_HOME"), getenv("CUDA_PATH"),
                           "/usr/local/cuda", "/usr/lib/cuda", "/usr"};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        if (!cands[i] || !*cands[i])
            continue;
        char probe[4200];
        snprintf(probe, sizeof probe, "%s/include/cuda_runtime_api.h", cands[i]);
        if (access(probe, R_OK) == 0) {
            snprintf(found, sizeof found, "%s", cands[i]);
            return found;
        }
    }
    return NULL;
}

/** Where the compiler looks for headers without derived flags: the folders of the user's
 *  flags, and the system's (CUDA's, /usr/local/include, /usr/include and its multiarch
 *  folders, clang's own). */
struct search {
    struct lint_strlist user, system;
};

/** Libraries whose headers their packages install outside the compiler's default path: a
 *  header by its name, and where to look for the folder that holds it, first match wins ($VAR
 *  is an environment variable's value; a glob's matches are taken last first: the newest
 *  version, as a rule). A build gives that folder (mpicc does, or the Makefile's -I); gpumem
 *  lint, given no build, finds it so. */
static const struct {
    const char *header;
    const char *where[6];
} libraries[] = {
    {"omp.h", {"/usr/lib/gcc/*/*/include"}},
    {"mpi.h",
     {"$MPI_HOME/include", "$MPI_ROOT/include", "$I_MPI_ROOT/include",
      "/usr/include/*-linux-gnu*/mpi", "/usr/include/openmpi*", "/usr/include/mpich*"}},
};

/** The folder of a library's that holds NAME, as "-isystem" takes it; or NULL. */
static const char *library_dir(const char *name, size_t nlen, char *buf, size_t cap)
{
    for (size_t i = 0; i < sizeof libraries / sizeof libraries[0]; i++) {
        if (strlen(libraries[i].header) != nlen || memcmp(libraries[i].header, name, nlen) != 0)
            continue;
        for (size_t k = 0; k < 6 && libraries[i].where[k]; k++) {
            const char *w = libraries[i].where[k];
            char pattern[4200];
            if (w[0] == '$') {
                const char *slash = strchr(w, '/');
                char var[64];
                snprintf(var, sizeof var, "%.*s", (int)(slash - w - 1), w + 1);
                const char *v = getenv(var);
                if (!v || !*v)
                    continue;
                snprintf(pattern, sizeof pattern, "%s%s/%.*s", v, slash, (int)nlen, name);
            } else {
                snprintf(pattern, sizeof pattern, "%s/%.*s", w, (int)nlen, name);
            }
            glob_t g;
            int found = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc;
            if (found) {
                snprintf(buf, cap, "%s", g.gl_pathv[g.gl_pathc - 1]);
                buf[strlen(buf) - nlen - 1] = '\0';
            }
            globfree(&g);
            if (found)
                return buf;
        }
    }
    return NULL;
}

#ifndef GPUMEM_LINT_STUBS_INSTALLED
#define GPUMEM_LINT_STUBS_INSTALLED ""
#endif
#ifndef GPUMEM_LINT_STUBS_SOURCE
#define GPUMEM_LINT_STUBS_SOURCE ""
#endif

/** The folder of gpumem lint's stand-in for a library header that no installation here holds
 *  (`mpi.h`: tools/lint/stubs/mpi.h, installed in <datadir>/gpumem/lint-stubs), so that a
 *  program that also uses MPI is analyzed where MPI is not installed; or NULL. */
static const char *stub_dir(const char *name, size_t nlen)
{
    if (nlen != 5 || memcmp(name, "mpi.h", 5) != 0)
        return NULL;
    const char *cands[] = {GPUMEM_LINT_STUBS_INSTALLED, GPUMEM_LINT_STUBS_SOURCE};
    char probe[4200];
    for (size_t i = 0; i < 2; i++) {
        snprintf(probe, sizeof probe, "%s/mpi.h", cands[i]);
        if (cands[i][0] && access(probe, R_OK) == 0)
            return cands[i];
    }
    return NULL;
}

/** The include folders of the user's flags: -I, -iquote, -isystem, -idirafter, joined or
 *  separate, made absolute. */
static void user_dirs(const struct lint_strlist *flags, struct lint_strlist *out)
{
    static const char *const opts[] = {"-I", "-iquote", "-isystem", "-idirafter"};
    for (size_t i = 0; i < flags->n; i++) {
        for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
            size_t ol = strlen(opts[k]);
            if (strncmp(flags->v[i], opts[k], ol) != 0)
                continue;
            const char *dir = flags->v[i][ol] ? flags->v[i] + ol
                              : i + 1 < flags->n ? flags->v[++i] : NULL;
            char *abs = dir ? lint_path_absolute(dir) : NULL;
            if (abs)
                lint_strlist_add(out, abs);
            free(abs);
            break;
        }
    }
}

static void add_glob(struct lint_strlist *out, const char *pattern)
{
    glob_t g;
    if (glob(pattern, 0, NULL, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; i++)
            lint_strlist_add(out, g.gl_pathv[i]);
    globfree(&g);
}

static void search_init(struct search *s, const struct lint_strlist *flags)
{
    memset(s, 0, sizeof *s);
    user_dirs(flags, &s->user);
    const char *cuda = lint_cuda_root();
    char buf[4200];
    if (cuda) {
        snprintf(buf, sizeof buf, "%s/include", cuda);
        lint_strlist_add(&s->system, buf);
        snprintf(buf, sizeof buf, "%s/include/cccl", cuda);
        lint_strlist_add(&s->system, buf);
    }
    lint_strlist_add(&s->system, "/usr/local/include");
    lint_strlist_add(&s->system, "/usr/include");
    add_glob(&s->system, "/usr/include/*-linux-gnu*");
    add_glob(&s->system, "/usr/lib/llvm-22/lib/clang/*/include");
}

static void search_free(struct search *s)
{
    lint_strlist_free(&s->user);
    lint_strlist_free(&s->system);
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/** DIR/NAME, normalized, when it is a file; malloc'd, or NULL. */
static char *file_in(const char *dir, const char *name, size_t nlen)
{
    size_t n = strlen(dir) + nlen + 2;
    char *p = malloc(n);
    if (!p)
        return NULL;
    snprintf(p, n, "%s/%.*s", dir, (int)nlen, name);
    char *norm = is_file(p) ? lint_path_normalize(p) : NULL;
    free(p);
    return norm;
}

/** The first folder of @p dirs that holds NAME: the file's path, malloc'd, or NULL. */
static char *find_in(const struct lint_strlist *dirs, const char *name, size_t nlen)
{
    for (size_t i = 0; i < dirs->n; i++) {
        char *p = file_in(dirs->v[i], name, nlen);
        if (p)
            return p;
    }
    return NULL;
}

/** Adds "-I DIR" (or @p opt DIR) to @p args unless it is there already. */
static void add_include(struct lint_strlist *args, const char *opt, const char *dir, size_t len)
{
    for (size_t i = 0; i + 1 < args->n; i++)
        if (strcmp(args->v[i], opt) == 0 && strlen(args->v[i + 1]) == len &&
            memcmp(args->v[i + 1], dir, len) == 0)
            return;
    lint_strlist_add(args, opt);
    lint_strlist_addn(args, dir, len);
}

static size_t common_prefix(const char *a, const char *b)
{
    size_t n = 0;
    while (a[n] && a[n] == b[n])
        n++;
    return n;
}

/** The header under the walked roots whose path ends in "/NAME", the nearest to folder
 *  @p here (the longest common prefix; the first in walk order among equals), or NULL. */
static const char *tree_header(const struct lint_units *u, const char *here, const char *name,
                               size_t nlen)
{
    const char *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < u->headers.n; i++) {
        const char *h = u->headers.v[i];
        size_t l = strlen(h);
        if (l > nlen && h[l - nlen - 1] == '/' && memcmp(h + l - nlen, name, nlen) == 0) {
            size_t c = common_prefix(h, here);
            if (!best || c > best_len) {
                best = h;
                best_len = c;
            }
        }
    }
    return best;
}

/** The repository that holds folder @p dir: the nearest folder at or above it with a .git (a
 *  folder, or a worktree's file), into @p top; 0 when there is none. */
static int repository_top(const char *dir, char *top, size_t n)
{
    snprintf(top, n, "%s", dir);
    for (;;) {
        char git[4200];
        snprintf(git, sizeof git, "%s/.git", top);
        if (access(git, F_OK) == 0)
            return 1;
        char *slash = strrchr(top, '/');
        if (!slash || slash == top)
            return 0;
        *slash = '\0';
    }
}

/** NAME in the include/ folder of a root that holds the unit (a named file's folder is a
 *  root, but not walked) or, inside a repository, of a folder above that root up to the
 *  repository's top: `gpumem lint examples/app.c` in a project with include/ at its top finds
 *  the header there. The header's path, malloc'd, with that folder an -I of the unit. */
static char *root_include(const struct lint_units *u, struct lint_unit *x, const char *name,
                          size_t nlen)
{
    for (size_t r = 0; r < u->roots.n; r++) {
        const char *root = u->roots.v[r];
        size_t rl = strlen(root);
        if (strncmp(x->abs, root, rl) != 0 || x->abs[rl] != '/')
            continue;
        /* The walk up is through the folders as they are on disk (a root may be a link). */
        char dir[PATH_MAX], top[PATH_MAX], inc[PATH_MAX + 16];
        if (!realpath(root, dir))
            snprintf(dir, sizeof dir, "%s", root);
        int in_repo = repository_top(dir, top, sizeof top);
        for (;;) {
            snprintf(inc, sizeof inc, "%s/include", dir);
            char *h = file_in(inc, name, nlen);
            if (h) {
                add_include(&x->args, "-I", inc, strlen(inc));
                return h;
            }
            char *slash = strrchr(dir, '/');
            if (!in_repo || strcmp(dir, top) == 0 || !slash || slash == dir)
                break;
            *slash = '\0';
        }
    }
    return NULL;
}

/** For `#include "name"` (or <name>) seen in folder @p here: the header's path, malloc'd, to
 *  be followed, or NULL for a system header or one not found. Where the compiler finds it
 *  (beside the includer for quotes, the user's folders, the system's) no flag is added;
 *  otherwise the folder of the walked tree that holds it becomes an -I of the unit. */
static char *resolve(const struct lint_units *u, const struct search *s, struct lint_unit *x,
                     const char *here, const char *name, size_t nlen, int quoted)
{
    char *found = quoted ? file_in(here, name, nlen) : NULL;
    if (!found)
        found = find_in(&s->user, name, nlen);
    if (found)
        return found;
    char *sys = find_in(&s->system, name, nlen);
    if (sys) {
        free(sys);
        return NULL;
    }
    char lib[4200];
    if (library_dir(name, nlen, lib, sizeof lib)) {
        add_include(&x->args, "-isystem", lib, strlen(lib));
        return NULL;
    }
    const char *h = tree_header(u, here, name, nlen);
    if (h) {
        add_include(&x->args, "-I", h, strlen(h) - nlen - 1);
        return strdup(h);
    }
    const char *stubs = stub_dir(name, nlen);
    if (stubs) {
        add_include(&x->args, "-isystem", stubs, strlen(stubs));
        return NULL;
    }
    return root_include(u, x, name, nlen);
}

/** The include directive on the line [p, eol): its name's start and length, and whether it
 *  is quoted; 0 when the line is not one. */
static int include_name(const char *p, const char *eol, const char **name, size_t *nlen,
                        int *quoted)
{
    const char *w, *rest;
    size_t wl;
    char close;
    if (!lint_directive(p, eol, &w, &wl, &rest) || wl != 7 || memcmp(w, "include", 7) != 0 ||
        !lint_include_target(rest, eol, name, nlen, &close))
        return 0;
    *quoted = close == '"';
    return 1;
}

/** Scans @p file (the unit, then the headers it includes, to a depth of 16) for includes;
 *  @p seen holds the files already scanned for this unit: its include closure. */
static void scan_includes(const struct lint_units *u, const struct search *s,
                          struct lint_unit *x, const char *file, struct lint_strlist *seen,
                          int depth)
{
    if (depth > 16 || lint_strlist_has(seen, file, strlen(file)))
        return;
    lint_strlist_add(seen, file);
    char *text, why_buf[128];
    size_t len;
    const char *why;
    if (lint_read_file(file, (size_t)64 << 20, &text, &len, &why, why_buf, sizeof why_buf))
        return;
    struct lint_cuda_sign sign;
    if (!x->as_cuda && strcmp(x->lang, "c") == 0 && lint_cuda_sign(text, len, &sign)) {
        char *shown = lint_path_display(file);
        size_t n = strlen(shown ? shown : file) + strlen(sign.what) + 24;
        x->as_cuda = malloc(n);
        if (x->as_cuda)
            snprintf(x->as_cuda, n, "%s:%u %s", shown ? shown : file, (unsigned)sign.line,
                     sign.what);
        free(shown);
    }
    char *here = strdup(file);
    char *slash = here ? strrchr(here, '/') : NULL;
    if (slash) {
        *slash = '\0';
        for (char *p = text; p < text + len;) {
            char *eol = p;
            while (eol < text + len && *eol != '\n' && *eol != '\r')
                eol++;
            const char *name;
            size_t nlen;
            int quoted;
            char *h = include_name(p, eol, &name, &nlen, &quoted)
                          ? resolve(u, s, x, here, name, nlen, quoted)
                          : NULL;
            if (h)
                scan_includes(u, s, x, h, seen, depth + 1);
            free(h);
            p = eol + 1;
        }
    }
    free(here);
    free(text);
}

/** The index of the walked (not named) unit at @p abs, or u->n. */
static size_t unit_at(const struct lint_units *u, const char *abs)
{
    if (!lint_unit_lang(abs))
        return u->n;
    for (size_t i = 0; i < u->n; i++)
        if (!u->v[i].from_db && !u->v[i].named && strcmp(u->v[i].abs, abs) == 0)
            return i;
    return u->n;
}

/** Drops the units marked in @p drop, keeping the others' order. */
static void drop_units(struct lint_units *u, const unsigned char *drop)
{
    size_t k = 0;
    for (size_t i = 0; i < u->n; i++) {
        if (!drop[i]) {
            u->v[k++] = u->v[i];
            continue;
        }
        lint_unit_free(&u->v[i]);
    }
    u->n = k;
}

/** An edge of "unit i includes unit j" (directly or through headers). */
struct edge {
    size_t i, j;
};

/** A unit that another unit includes is dropped, unless it includes that unit too (a cycle:
 *  both are kept). Source files included by others are few, so the edges are too. */
static void drop_included(struct lint_units *u, const struct edge *e, size_t ne)
{
    unsigned char *drop = calloc(u->n ? u->n : 1, 1);
    if (!drop)
        return;
    for (size_t a = 0; a < ne; a++) {
        int cycle = 0;
        for (size_t b = 0; b < ne && !cycle; b++)
            cycle = e[b].i == e[a].j && e[b].j == e[a].i;
        if (!cycle)
            drop[e[a].j] = 1;
    }
    drop_units(u, drop);
    free(drop);
}

void lint_derive_flags(struct lint_units *u, const struct lint_strlist *user_flags)
{
    struct search s;
    search_init(&s, user_flags);
    struct edge *e = NULL;
    size_t ne = 0, cap = 0;
    for (size_t i = 0; i < u->n; i++) {
        struct lint_unit *x = &u->v[i];
        if (x->from_db)
            continue;
        struct lint_strlist seen = {0};
        scan_includes(u, &s, x, x->abs, &seen, 0);
        char *cuda = x->as_cuda ? strdup("cuda") : NULL;
        if (cuda) {
            free(x->lang);
            x->lang = cuda;
        }
        for (size_t k = 1; k < seen.n; k++) {
            size_t j = unit_at(u, seen.v[k]);
            struct edge *g = j < u->n && j != i ? lint_array_grow(e, ne, &cap, sizeof *e) : NULL;
            if (g) {
                e = g;
                e[ne++] = (struct edge){i, j};
            }
        }
        lint_strlist_free(&seen);
    }
    drop_included(u, e, ne);
    free(e);
    search_free(&s);
}
