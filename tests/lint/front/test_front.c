/* The front end of `gpumem lint` through gpumem_lint_main, with a stand-in for clang
 * (fake_clang.c, passed as argv[1]) that reports what `FAKE:` comments ask for: every
 * option, exit status, format, suppression, baseline, config search, compilation database
 * translation, parse-failure report, and the odd inputs (FIFOs, CR line endings, NUL bytes,
 * long lines, deep folders). argv[2] is the folder of robustness inputs. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include "../../harness.h"
#include "../../../tools/tool.h"
#include "lint_internal.h"
#include "../../../tools/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

static char root[256];
static const char *fake;
static const char *inputs;

struct run {
    int rc;
    char out[1 << 17];
    char err[1 << 15];
};
static struct run r;

static void slurp_fd(int fd, char *buf, size_t cap)
{
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, buf, cap - 1);
    buf[n > 0 ? n : 0] = '\0';
}

/** Runs `gpumem lint --clang=FAKE --analyzer-plugin=PLUGIN ARGS...` (NULL-terminated) in
 *  the current folder; keeps its status, stdout and stderr. */
static void lint_argv(int with_fake, const char *first, va_list ap)
{
    char *argv[96];
    int argc = 0;
    static char clang_opt[600], plugin_opt[600];
    argv[argc++] = (char *)"lint";
    if (with_fake) {
        snprintf(clang_opt, sizeof clang_opt, "--clang=%s", fake);
        snprintf(plugin_opt, sizeof plugin_opt, "--analyzer-plugin=%s/plugin.so", root);
        argv[argc++] = clang_opt;
        argv[argc++] = plugin_opt;
    }
    for (const char *a = first; a && argc < 95; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    argv[argc] = NULL;
    char op[300], ep[300];
    snprintf(op, sizeof op, "%s/.stdout", root);
    snprintf(ep, sizeof ep, "%s/.stderr", root);
    int fo = open(op, O_RDWR | O_CREAT | O_TRUNC, 0600);
    int fe = open(ep, O_RDWR | O_CREAT | O_TRUNC, 0600);
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    dup2(fo, 1);
    dup2(fe, 2);
    r.rc = gpumem_lint_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    slurp_fd(fo, r.out, sizeof r.out);
    slurp_fd(fe, r.err, sizeof r.err);
    close(fo);
    close(fe);
}

static void lint(const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    lint_argv(1, first, ap);
    va_end(ap);
}

/** As lint(), without the fake clang and plugin options. */
static void lint_bare(const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    lint_argv(0, first, ap);
    va_end(ap);
}

/** A fresh, empty folder under the test root, made the current folder. */
static void fresh(const char *name)
{
    char d[512];
    snprintf(d, sizeof d, "%s/%s", root, name);
    if (mkdir(d, 0700) != 0 && errno != EEXIST) {
        perror(d);
        exit(1);
    }
    if (chdir(d) != 0) {
        perror(d);
        exit(1);
    }
}

static void write_file(const char *name, const char *text)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", name);
    for (char *s = strchr(dir, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(dir, 0700);
        *s = '/';
    }
    FILE *f = fopen(name, "wb");
    if (!f) {
        perror(name);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static const char leak_src[] = "void f(unsigned n) {\n"
                               "    float *d;\n"
                               "    cudaMalloc(&d, n);\n"
                               "    if (n) return; // FAKE: gpumem.EarlyExitLeak alloc=3 this "
                               "return leaks 'd'\n"
                               "}\n";

static void test_help_version_rules(void)
{
    fresh("help");
    lint_bare("--help", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, "usage: gpumem lint");
    EXPECT_CONTAINS(r.out, "GM011");
    EXPECT_CONTAINS(r.out, "--baseline");
    EXPECT_CONTAINS(r.out, "gpumem-lint: ignore[GM004]");
    lint_bare("-h", NULL);
    EXPECT_EQ(r.rc, 0);
    lint_bare("--version", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, "gpumem lint " LINT_VERSION);
    lint_bare("-V", NULL);
    EXPECT_CONTAINS(r.out, "gpumem lint");
    lint_bare("--list-rules", NULL);
    EXPECT_EQ(r.rc, 0);
    for (int i = 0; i < LINT_RULE_COUNT; i++) {
        EXPECT_CONTAINS(r.out, lint_rules[i].id);
        EXPECT_CONTAINS(r.out, lint_rules[i].checker);
    }
}

static void test_usage_errors(void)
{
    fresh("usage");
    write_file("a.cu", leak_src);
    lint(NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "no files or folders");
    lint("--formt=json", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "gpumem lint: error: unknown option '--formt'; did you mean --format?\n"
                           "(`gpumem lint --help` lists the options)");
    lint("--frobnicate", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "unknown option '--frobnicate'");
    EXPECT_TRUE(strstr(r.err, "did you mean") == NULL);
    lint("a.cu", "--format", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "needs a value");
    lint("--format=xml", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "gpumem lint: error: --format takes text, json or sarif, not 'xml'\n"
                           "(`gpumem lint --help` lists the options)");
    lint("--jobs=0", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    lint("--timeout=x", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    lint("--path=some", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    lint("--disable=GM099", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "--disable takes a list of rules (GM001 to GM");
    EXPECT_CONTAINS(r.err, "not 'GM099'");
    lint("--severity=GM001", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    lint("--no-notes", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "--pedantic");
    lint("nonexistent.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "nonexistent.cu");
    lint("--check-macro=MY_CHECK", "--no-config", "a.cu", NULL);
    EXPECT_CONTAINS(r.err, "'check-macro' has no effect");
    EXPECT_EQ(r.rc, 1);
    /* The grammar every gpumem command shares: -j4 and -j 4, paths among the options, `--`
     * hands the rest to the compiler, a switch takes no value. */
    lint("-qj2", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "unknown option '-qj2'");
    lint("--quiet=1", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "--quiet takes no value (not '1')");
    lint("--no-config", "a.cu", "-j1", "--print-commands", "--", "-DMARK_ME", "--format=x", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, "a.cu");
    EXPECT_CONTAINS(r.out, "-DMARK_ME");
    EXPECT_CONTAINS(r.out, "--format=x");
    lint("--no-config", "-j2", "--print-commands", "a.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    lint("--no-config", "-j", "0", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "--jobs takes a number from 1 to 256, not '0'");
}

static void test_text_and_paths(void)
{
    fresh("text");
    write_file("a.cu", leak_src);
    lint("--no-config", "a.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_CONTAINS(r.out, "a.cu:4:5: warning: this return leaks 'd' [GM006]\n");
    EXPECT_CONTAINS(r.out, "    if (n) return;");
    EXPECT_CONTAINS(r.out, "\n    ^\n");
    EXPECT_CONTAINS(r.out, "a.cu:3:3: note: allocated here with cudaMalloc\n");
    EXPECT_CONTAINS(r.out, "a.cu:4:2: note: Assuming 'flag' is not equal to 0\n");
    EXPECT_TRUE(strstr(r.out, "Taking true branch") == NULL);
    EXPECT_TRUE(strstr(r.out, "dead") == NULL); /* clang's own checker is dropped */
    EXPECT_CONTAINS(r.out, "1 warning in 1 file");
    lint("--no-config", "--path=full", "a.cu", NULL);
    EXPECT_CONTAINS(r.out, "a.cu:4:2: note: Taking true branch\n");
    EXPECT_EQ(count(r.out, "allocated here"), 1);
    lint("--no-config", "--path", "none", "a.cu", NULL);
    EXPECT_TRUE(strstr(r.out, "Assuming") == NULL);
    EXPECT_CONTAINS(r.out, "note: allocated here with cudaMalloc");
    lint("--no-config", "-q", "a.cu", NULL);
    EXPECT_TRUE(strstr(r.out, "1 warning in") == NULL);
    /* Both option forms. */
    lint("--no-config", "--format", "json", "a.cu", NULL);
    EXPECT_CONTAINS(r.out, "\"rule\": \"GM006\"");
    lint("--no-config", "--format=json", "-j2", "a.cu", NULL);
    EXPECT_CONTAINS(r.out, "\"rule\": \"GM006\"");
    lint("--no-config", "-j", "2", "-oreport.txt", "a.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_EQ(r.out[0], '\0');
    FILE *f = fopen("report.txt", "r");
    char buf[4096] = "";
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    EXPECT_CONTAINS(buf, "[GM006]");
    lint("--no-config", "-o", "/nonexistent-dir/r.txt", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "cannot write /nonexistent-dir/r.txt");
    lint("--no-config", "-o", "/dev/full", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "cannot write /dev/full");
}

static void test_exit_statuses(void)
{
    fresh("status");
    write_file("clean.cu", "int f(void) { return 0; }\n");
    write_file("leak.cu", leak_src);
    write_file("note.cu", "// FAKE: gpumem.VectorAlignment level=note alignment not provable\n");
    lint("--no-config", "clean.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, "no findings in 1 file");
    lint("--no-config", "--fail-on=never", "leak.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    lint("--no-config", "--fail-on=error", "leak.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    lint("--no-config", "--fail-on=error", "--severity", "GM006:error", "leak.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_CONTAINS(r.out, "error: this return leaks");
    lint("--no-config", "--disable=GM006", "leak.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    lint("--no-config", "--disable=gpumem.EarlyExitLeak", "leak.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    /* --enable names the rules to run: the others' findings go; lists add up; the command
     * line's first list replaces the config file's. */
    write_file("two.cu", "void g(float *p) {\n"
                         "  // FAKE: gpumem.UncheckedStatus status unchecked\n"
                         "  // FAKE: gpumem.EarlyExitLeak alloc=1 this return leaks 'p'\n}\n");
    lint("--no-config", "two.cu", NULL);
    EXPECT_CONTAINS(r.out, "[GM004]");
    EXPECT_CONTAINS(r.out, "[GM006]");
    lint("--no-config", "--enable=GM006", "two.cu", NULL);
    EXPECT_EQ(strstr(r.out, "[GM004]") == NULL, 1);
    EXPECT_CONTAINS(r.out, "[GM006]");
    lint("--no-config", "--enable=GM006", "--enable", "GM004", "two.cu", NULL);
    EXPECT_CONTAINS(r.out, "[GM004]");
    EXPECT_CONTAINS(r.out, "[GM006]");
    write_file("enable.cfg", "enable = GM004\n");
    lint("--config=enable.cfg", "two.cu", NULL);
    EXPECT_CONTAINS(r.out, "[GM004]");
    EXPECT_EQ(strstr(r.out, "[GM006]") == NULL, 1);
    lint("--config=enable.cfg", "--enable=GM006", "two.cu", NULL);
    EXPECT_EQ(strstr(r.out, "[GM004]") == NULL, 1);
    EXPECT_CONTAINS(r.out, "[GM006]");
    lint("--no-config", "--enable=GM006", "--disable=GM006", "two.cu", NULL);
    EXPECT_CONTAINS(r.out, "no findings");
    /* GM003 notes only with --pedantic. */
    lint("--no-config", "note.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, "no findings");
    lint("--no-config", "--pedantic", "--fail-on=note", "note.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_CONTAINS(r.out, "note: alignment not provable [GM003]");
    /* Missing analyzer: status 4 and what to install. */
    lint_bare("--no-config", "--clang=/nonexistent/clang++-22", "clean.cu", NULL);
    EXPECT_EQ(r.rc, 77);
    EXPECT_CONTAINS(r.err, "apt-get install clang-22 libclang-22-dev");
    char opt[600];
    snprintf(opt, sizeof opt, "--clang=%s", fake);
    lint_bare("--no-config", opt, "--analyzer-plugin=/nonexistent/gpumem-analyzer.so",
              "clean.cu", NULL);
    EXPECT_EQ(r.rc, 77);
    EXPECT_CONTAINS(r.err, "gpumem-analyzer.so");
    EXPECT_CONTAINS(r.err, "apt-get install clang-22 libclang-22-dev");
    write_file("noplugin.cu", "// FAKE: noplugin\n");
    lint("--no-config", "noplugin.cu", NULL);
    EXPECT_EQ(r.rc, 77);
    EXPECT_CONTAINS(r.err, "could not load the analyzer plugin");
}

static void test_not_analyzed(void)
{
    fresh("broken");
    write_file("bad.cu", "int f() {\n  return x; // FAKE: error use of undeclared identifier 'x'\n}\n");
    write_file("good.cu", leak_src);
    lint("--no-config", ".", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.err, "bad.cu: not analyzed: ");
    EXPECT_CONTAINS(r.err, "bad.cu:2:1: error: use of undeclared identifier 'x'");
    EXPECT_TRUE(strstr(r.err, "something harmless") == NULL);
    EXPECT_CONTAINS(r.out, "[GM006]"); /* the other unit still reports */
    EXPECT_CONTAINS(r.out, "1 not analyzed");
    lint("--no-config", "-q", ".", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.err, "bad.cu: not analyzed: "); /* -q still says why the status is 3 */
    lint("--no-config", "--format=sarif", ".", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.out, "\"executionSuccessful\": false");
    EXPECT_CONTAINS(r.out, "use of undeclared identifier");
    /* Where the cause is known, what to do. */
    fresh("nofix");
    write_file("nohdr.cu", "// FAKE: error 'elsewhere.h' file not found\n");
    write_file("old.cu", "// FAKE: error use of undeclared identifier 'cudaThreadSynchronize'\n");
    write_file("byte.cpp", "// FAKE: error reference to 'byte' is ambiguous\n");
    lint("--no-config", ".", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.err, "'elsewhere.h' file not found (the header is not under the paths "
                           "given: add its folder with -I after --)");
    EXPECT_CONTAINS(r.err, "'cudaThreadSynchronize' (CUDA 13 removed the cudaThread* calls: ");
    EXPECT_CONTAINS(r.err, "error: reference to 'byte' is ambiguous (C++17's std::byte meets the "
                           "program's own byte under `using namespace std`: pass the standard its "
                           "build uses after --, such as -std=c++14)");
    /* A unit that stops for a define its build gives: which -D, where the error shows it. */
    fresh("defines");
    write_file("err.cu", "#if defined(FLOAT)\ntypedef float real;\n#else\n"
                         "  #  error Must define FLOAT // FAKE: error Must define FLOAT\n#endif\n");
    write_file("os/os.h", "#ifndef OS_H\n#define OS_H\n#define PLAIN 1\n"
                          "#if X_VERSION > 2 && defined(MY_OS)\n#define MY_WEAK __attribute__((weak))\n"
                          "#elif defined(OTHER_OS)\n#else\n#define MY_STRONG\n#endif\n#endif\n");
    write_file("weak.cu", "#include \"os/os.h\"\n"
                          "MY_WEAK int f(void); // FAKE: error unknown type name 'MY_WEAK'\n");
    write_file("strong.cu", "#include \"os/os.h\"\n"
                            "MY_STRONG int g; // FAKE: error unknown type name 'MY_STRONG'\n");
    write_file("nx.cu", "int a[NX]; // FAKE: error use of undeclared identifier 'NX'\n");
    write_file("plain.cu", "#include \"os/os.h\"\n"
                           "int b = PLAIN2; // FAKE: error use of undeclared identifier 'PLAIN'\n");
    lint("--no-config", "-q", ".", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.err, "err.cu:4:1: error: Must define FLOAT (an #error "
                           "that a define of its build avoids: pass that define after -- (-DNAME "
                           "for a macro the message names), or give the build's "
                           "compile_commands.json with -p)");
    EXPECT_CONTAINS(r.err, "error: unknown type name 'MY_WEAK' (MY_WEAK is defined at os/os.h:5 "
                           "only under `#if X_VERSION > 2 && defined(MY_OS)` (line 4): pass "
                           "-DMY_OS after -- if its build defines it, or give the build's "
                           "compile_commands.json with -p)");
    EXPECT_CONTAINS(r.err, "(MY_STRONG is defined at os/os.h:8 only in the #else of `#elif "
                           "defined(OTHER_OS)` (line 6): pass the defines its build gives after "
                           "--, or give the build's compile_commands.json with -p)");
    EXPECT_CONTAINS(r.err, "error: use of undeclared identifier 'NX' (if its build defines NX, "
                           "pass -DNX=VALUE after --, or give the build's compile_commands.json "
                           "with -p)");
    /* Defined under its include guard only: not a define of the build's. */
    EXPECT_CONTAINS(r.err, "'PLAIN' (if its build defines PLAIN, pass -DPLAIN=VALUE");
    fresh("timeout");
    write_file("slow.cu", "// FAKE: hang\n");
    time_t t0 = time(NULL);
    lint("--no-config", "--timeout=1", "slow.cu", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.err, "timed out after 1 s");
    EXPECT_LE(time(NULL) - t0, 10);
    fresh("crash");
    write_file("boom.cu", "// FAKE: crash\n");
    lint("--no-config", "boom.cu", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.err, "the analyzer crashed (signal 6)");
    fresh("toobig");
    write_file("big.cu", leak_src);
    lint("--no-config", "--max-file-size=10", "big.cu", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.err, "too big");
}

static void test_no_source(void)
{
    fresh("empty");
    write_file("notes.txt", "nothing\n");
    lint("--no-config", ".", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.err, "no source file found");
    fresh("only-excluded");
    write_file("src/a.cu", leak_src);
    lint("--no-config", "--exclude", "src/*", ".", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.err, "no source file found");
}

static void test_exclude_normalized(void)
{
    fresh("exclude");
    write_file("src/a.cu", leak_src);
    write_file("lib/b.cu", leak_src);
    lint("--no-config", "--exclude=src/*", ".", NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_TRUE(strstr(r.out, "src/a.cu") == NULL);
    EXPECT_CONTAINS(r.out, "lib/b.cu:4:5:");
    lint("--no-config", "--exclude=./src/*", "./", NULL);
    EXPECT_TRUE(strstr(r.out, "src/a.cu") == NULL);
    EXPECT_CONTAINS(r.out, "lib/b.cu:4:5:");
    /* Shown paths are normalized whatever the spelling of the argument. */
    lint("--no-config", ".//lib/../lib/b.cu", NULL);
    EXPECT_TRUE(strncmp(r.out, "lib/b.cu:4:5:", 13) == 0);
    /* The project's config, matched relative to its folder. */
    write_file(".gpumem-lint", "exclude = src/*\n");
    lint(".", NULL);
    EXPECT_TRUE(strstr(r.out, "src/a.cu") == NULL);
    EXPECT_CONTAINS(r.out, "lib/b.cu");
    if (chdir("lib") == 0) {
        lint("../src", "../lib", NULL);
        EXPECT_TRUE(strstr(r.out, "src/a.cu") == NULL);
        EXPECT_CONTAINS(r.out, "b.cu:4:5:");
    }
}

static void test_suppressions(void)
{
    fresh("suppress");
    write_file("same.cu", "int f() {\n  return 0; // FAKE: gpumem.NeverReleased leak gpumem-lint: "
                          "ignore[GM001] reason\n}\n");
    lint("--no-config", "same.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    write_file("above.cu", "// gpumem-lint: ignore[GM004,GM001] the process exits\n"
                           "int x; // FAKE: gpumem.NeverReleased leak\n");
    lint("--no-config", "above.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    write_file("other.cu", "// gpumem-lint: ignore[GM004]\n"
                           "int x; // FAKE: gpumem.NeverReleased leak\n");
    lint("--no-config", "other.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    write_file("all.cu", "/* gpumem-lint: ignore */\nint x; // FAKE: gpumem.DoubleRelease twice\n");
    lint("--no-config", "all.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    write_file("file.cu", "int x; // FAKE: gpumem.UseAfterRelease used\n\n"
                          "// gpumem-lint: ignore-file[GM009]\n");
    lint("--no-config", "file.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    write_file("string.cu", "const char *s = \"// gpumem-lint: ignore\";\n"
                            "int x; // FAKE: gpumem.NeverReleased leak\n");
    lint("--no-config", "string.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    /* Two lines above is too far. */
    write_file("far.cu", "// gpumem-lint: ignore[GM001]\n\nint x; // FAKE: gpumem.NeverReleased leak\n");
    lint("--no-config", "far.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    /* suppress = GLOB: RULES in the config. */
    write_file("cfg/.gpumem-lint", "suppress = legacy/*.cu: GM001\n");
    write_file("cfg/legacy/old.cu", "int x; // FAKE: gpumem.NeverReleased leak\n");
    write_file("cfg/new.cu", "int x; // FAKE: gpumem.NeverReleased leak\n");
    if (chdir("cfg") == 0) {
        lint(".", NULL);
        EXPECT_EQ(r.rc, 1);
        EXPECT_TRUE(strstr(r.out, "legacy/old.cu") == NULL);
        EXPECT_CONTAINS(r.out, "new.cu:1:5:");
    }
}

static void test_cr_line_endings(void)
{
    fresh("cr");
    /* Bare CR: the finding is on line 3, its suppression on line 2; clang counts CR lines. */
    write_file("cr.cu", "int a;\r// gpumem-lint: ignore[GM001]\rint x; // FAKE: gpumem.NeverReleased leak\r"
                        "int y; // FAKE: gpumem.DoubleRelease twice\r");
    lint("--no-config", "cr.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_TRUE(strstr(r.out, "GM001") == NULL);
    EXPECT_CONTAINS(r.out, "cr.cu:4:5: warning: twice [GM008]\nint y;");
    write_file("crlf.cu", "int a;\r\n// gpumem-lint: ignore[GM001]\r\nint x; // FAKE: gpumem.NeverReleased leak\r\n");
    lint("--no-config", "crlf.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    write_file(".gpumem-lint", "disable = GM008\rfail-on = warning\r");
    lint("cr.cu", NULL);
    EXPECT_EQ(r.rc, 0);
}

static void test_json_structure(void)
{
    fresh("json");
    write_file("a.cu", leak_src);
    lint("--no-config", "--format=json", "a.cu", NULL);
    json_error_t err;
    json_t *doc = json_loads(r.out, 0, &err);
    ASSERT_NOT_NULL(doc);
    EXPECT_STR_EQ(json_string_value(json_object_get(doc, "tool")), "gpumem lint");
    json_t *f = json_array_get(json_object_get(doc, "findings"), 0);
    EXPECT_STR_EQ(json_string_value(json_object_get(f, "file")), "a.cu");
    EXPECT_EQ(json_integer_value(json_object_get(f, "line")), 4);
    EXPECT_EQ(json_integer_value(json_object_get(f, "column")), 5);
    EXPECT_STR_EQ(json_string_value(json_object_get(f, "rule")), "GM006");
    EXPECT_STR_EQ(json_string_value(json_object_get(f, "checker")), "gpumem.EarlyExitLeak");
    EXPECT_STR_EQ(json_string_value(json_object_get(f, "severity")), "warning");
    EXPECT_EQ(strlen(json_string_value(json_object_get(f, "fingerprint"))), 18);
    json_t *rel = json_array_get(json_object_get(f, "related"), 0);
    EXPECT_EQ(json_integer_value(json_object_get(rel, "line")), 3);
    EXPECT_STR_EQ(json_string_value(json_object_get(rel, "message")),
                  "allocated here with cudaMalloc");
    EXPECT_EQ(json_array_size(json_object_get(f, "path")), 4);
    json_t *sum = json_object_get(doc, "summary");
    EXPECT_EQ(json_integer_value(json_object_get(sum, "files")), 1);
    EXPECT_EQ(json_integer_value(json_object_get(sum, "warnings")), 1);
    EXPECT_EQ(json_integer_value(json_object_get(sum, "notAnalyzed")), 0);
    json_decref(doc);
}

/** The fields of SARIF 2.1.0 that code-scanning services read, checked one by one. */
static void check_sarif(const char *text, int results)
{
    json_error_t err;
    json_t *doc = json_loads(text, 0, &err);
    ASSERT_NOT_NULL(doc);
    EXPECT_STR_EQ(json_string_value(json_object_get(doc, "version")), "2.1.0");
    EXPECT_TRUE(json_is_string(json_object_get(doc, "$schema")));
    json_t *runs = json_object_get(doc, "runs");
    EXPECT_EQ(json_array_size(runs), 1);
    json_t *run = json_array_get(runs, 0);
    json_t *driver = json_object_get(json_object_get(run, "tool"), "driver");
    EXPECT_STR_EQ(json_string_value(json_object_get(driver, "name")), "gpumem lint");
    json_t *rules = json_object_get(driver, "rules");
    EXPECT_EQ(json_array_size(rules), LINT_RULE_COUNT);
    for (size_t i = 0; i < json_array_size(rules); i++) {
        json_t *rule = json_array_get(rules, i);
        EXPECT_STR_EQ(json_string_value(json_object_get(rule, "id")), lint_rules[i].id);
        EXPECT_TRUE(json_is_string(json_object_get(rule, "name")));
        EXPECT_TRUE(json_is_string(
            json_object_get(json_object_get(rule, "shortDescription"), "text")));
        EXPECT_TRUE(json_is_string(json_object_get(json_object_get(rule, "help"), "text")));
        const char *level = json_string_value(
            json_object_get(json_object_get(rule, "defaultConfiguration"), "level"));
        EXPECT_TRUE(level && (!strcmp(level, "note") || !strcmp(level, "warning") ||
                              !strcmp(level, "error")));
    }
    json_t *res = json_object_get(run, "results");
    EXPECT_EQ(json_array_size(res), results);
    for (size_t i = 0; i < json_array_size(res); i++) {
        json_t *x = json_array_get(res, i);
        const char *id = json_string_value(json_object_get(x, "ruleId"));
        json_int_t idx = json_integer_value(json_object_get(x, "ruleIndex"));
        EXPECT_TRUE(id && idx >= 0 && idx < LINT_RULE_COUNT &&
                    strcmp(id, lint_rules[idx].id) == 0);
        EXPECT_TRUE(json_is_string(json_object_get(json_object_get(x, "message"), "text")));
        json_t *loc = json_object_get(json_array_get(json_object_get(x, "locations"), 0),
                                      "physicalLocation");
        EXPECT_TRUE(json_is_string(
            json_object_get(json_object_get(loc, "artifactLocation"), "uri")));
        EXPECT_GE(json_integer_value(json_object_get(json_object_get(loc, "region"), "startLine")),
                  1);
        EXPECT_TRUE(json_is_string(json_object_get(json_object_get(x, "partialFingerprints"),
                                                   "gpumemLintHash/v2")));
        json_t *tf = json_array_get(
            json_object_get(json_array_get(json_object_get(x, "codeFlows"), 0), "threadFlows"),
            0);
        EXPECT_GE(json_array_size(json_object_get(tf, "locations")), 1);
        json_t *step = json_array_get(json_object_get(tf, "locations"), 0);
        EXPECT_TRUE(json_is_object(json_object_get(step, "location")));
        const char *imp = json_string_value(json_object_get(step, "importance"));
        EXPECT_TRUE(imp && (!strcmp(imp, "essential") || !strcmp(imp, "important") ||
                            !strcmp(imp, "unimportant")));
        json_t *rel = json_object_get(x, "relatedLocations");
        if (rel) {
            EXPECT_TRUE(json_is_integer(json_object_get(json_array_get(rel, 0), "id")));
            EXPECT_TRUE(json_is_object(json_object_get(json_array_get(rel, 0), "physicalLocation")));
        }
    }
    json_t *inv = json_array_get(json_object_get(run, "invocations"), 0);
    EXPECT_TRUE(json_is_boolean(json_object_get(inv, "executionSuccessful")));
    json_decref(doc);
}

static void test_sarif_structure(void)
{
    fresh("sarif");
    write_file("a.cu", leak_src);
    write_file("b.cu", "int x; // FAKE: gpumem.InteriorRelease interior\n");
    lint("--no-config", "--format=sarif", ".", NULL);
    EXPECT_EQ(r.rc, 1);
    check_sarif(r.out, 2);
    EXPECT_CONTAINS(r.out, "\"relatedLocations\"");
    EXPECT_CONTAINS(r.out, "\"uriBaseId\": \"SRCROOT\"");
    EXPECT_CONTAINS(r.out, "\"originalUriBaseIds\"");
    EXPECT_CONTAINS(r.out, "\"clang/issueHash/v1\"");
}

static void test_baseline(void)
{
    fresh("baseline");
    write_file("a.cu", leak_src);
    lint("--no-config", "--format=sarif", "-o", "old.sarif", "a.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    lint("--no-config", "--baseline=old.sarif", "a.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, "no findings in 1 file, 1 in the baseline not shown");
    /* Lines added above keep the fingerprint; a new finding is reported. */
    char moved[2048];
    snprintf(moved, sizeof moved, "// a new comment\n\n%s"
             "void g(void) {} // FAKE: gpumem.DoubleRelease released twice\n", leak_src);
    write_file("a.cu", moved);
    lint("--no-config", "--baseline", "old.sarif", "a.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_TRUE(strstr(r.out, "GM006") == NULL);
    EXPECT_CONTAINS(r.out, "a.cu:8:5: warning: released twice [GM008]");
    EXPECT_CONTAINS(r.out, "1 in the baseline not shown");
    write_file("bad.sarif", "{\"no\": 1}");
    lint("--no-config", "--baseline=bad.sarif", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "not a SARIF file");
    lint("--no-config", "--baseline=missing.sarif", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    mkfifo("fifo.sarif", 0600);
    lint("--no-config", "--baseline=fifo.sarif", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "not a regular file");
}

static void test_config_search(void)
{
    fresh("search");
    write_file("proj/.git/HEAD", "ref: x\n");
    write_file("proj/.gpumem-lint", "disable = GM006\n");
    write_file("proj/src/deep/a.cu", leak_src);
    if (chdir("proj/src/deep") != 0)
        return;
    lint("a.cu", NULL);
    EXPECT_EQ(r.rc, 0); /* found two folders up */
    lint("--no-config", "a.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    if (chdir(root) != 0)
        return;
    /* From elsewhere, the search starts at the first path's folder. */
    char p[512];
    snprintf(p, sizeof p, "%s/search/proj/src", root);
    lint(p, NULL);
    EXPECT_EQ(r.rc, 0);
    /* It stops at the repository root (.git): a config above it is not read. */
    fresh("search2");
    write_file(".gpumem-lint", "disable = GM006\n");
    write_file("repo/.git/HEAD", "ref: x\n");
    write_file("repo/a.cu", leak_src);
    lint("repo", NULL);
    EXPECT_EQ(r.rc, 1);
}

static void test_config_errors(void)
{
    fresh("cfgerr");
    write_file("a.cu", leak_src);
    write_file("typo.cfg", "disabel = GM001\n");
    lint("--config=typo.cfg", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "gpumem lint: error: typo.cfg:1: unknown option 'disabel'; did you mean "
                           "disable?\n");
    EXPECT_TRUE(strstr(r.err, "lists the options") == NULL); /* a file's line, not the command line */
    write_file("noeq.cfg", "\n\ndisable GM001\n");
    lint("--config", "noeq.cfg", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "noeq.cfg:3: expected 'key = value'");
    mkdir("folder.cfg", 0700);
    lint("--config=folder.cfg", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "it is a folder");
    lint("--config=missing.cfg", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "missing.cfg");
    mkfifo("fifo.cfg", 0600);
    lint("--config=fifo.cfg", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "not a regular file");
    /* A NUL byte names its line. */
    FILE *f = fopen("nul.cfg", "wb");
    fwrite("fail-on = warning\ndisable = GM0\0 01\n", 1, 36, f);
    fclose(f);
    lint("--config=nul.cfg", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "nul.cfg:2: the line holds a NUL byte");
    /* A line longer than 1023 bytes is one line: its comment's tail is no option. */
    char longline[3000];
    int k = snprintf(longline, sizeof longline, "disable = GM006 # ");
    while (k < 1500)
        longline[k++] = 'x';
    k += snprintf(longline + k, sizeof longline - (size_t)k, " format = json\n");
    write_file("long.cfg", longline);
    lint("--config=long.cfg", "a.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_TRUE(strstr(r.out, "\"findings\"") == NULL);
    /* A long value is kept whole. */
    char longval[3000];
    k = snprintf(longval, sizeof longval, "exclude = ");
    while (k < 1400)
        longval[k++] = 'y';
    k += snprintf(longval + k, sizeof longval - (size_t)k, ",*/a.cu\n");
    write_file("longval.cfg", longval);
    lint("--config=longval.cfg", ".", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.err, "no source file found");
    /* Every key, as the config file spells it. */
    write_file("all.cfg", "format = text\njobs = 2\nexclude = x/*\nextensions = .cu\n"
                          "max-file-size = 1MiB\nenable = GM001,GM006\ndisable = GM003\n"
                          "launch-check = MY_LAUNCH\nowner-fn = put\nrelease-fn = recycle\n"
                          "severity = GM002: error\nfail-on = warning\nsuppress = z/*\n"
                          "pedantic = off\npath = short\ntimeout = 60\nquiet = off\n"
                          "baseline = \n");
    lint("--config=all.cfg", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2); /* an empty baseline path is not a file */
    write_file("all.cfg", "format = text\njobs = 2\nexclude = x/*\nextensions = .cu\n"
                          "max-file-size = 1MiB\nenable = GM001,GM006\ndisable = GM003\n"
                          "launch-check = MY_LAUNCH\nowner-fn = put\nrelease-fn = recycle\n"
                          "severity = GM002: error\nfail-on = warning\nsuppress = z/*\n"
                          "pedantic = off\npath = short\ntimeout = 60\nquiet\n");
    lint("--config=all.cfg", "a.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_TRUE(strstr(r.out, "1 warning in") == NULL); /* quiet */
}

static void test_print_commands(void)
{
    fresh("commands");
    write_file("a.cu", leak_src);
    write_file("b.c", "int x;\n");
    write_file("c.cpp", "int y;\n");
    lint("--no-config", "--print-commands", "--release-fn=recycle,drop", "--owner-fn", "put",
         "--launch-check=MY_LAUNCH", "--pedantic", ".", "--", "-DFOO=1", "-std=c++17", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, " --analyze -x cuda --cuda-host-only");
    EXPECT_CONTAINS(r.out, "-nocudalib");
    EXPECT_CONTAINS(r.out, "cuda-prelude.h "); /* nvcc's __CUDACC__ of 1 */
    EXPECT_CONTAINS(r.out, "-isystem /usr/local/cuda/include/cccl "); /* CUB's, a library's */
    EXPECT_CONTAINS(r.out, " --analyze -x c ");
    EXPECT_CONTAINS(r.out, " --analyze -x c++ ");
    EXPECT_EQ(count(r.out, "-DFOO=1 -std=c++17"), 3);
    EXPECT_CONTAINS(r.out, "-Xclang -load -Xclang ");
    EXPECT_CONTAINS(r.out, "-Xclang -analyzer-checker=gpumem ");
    EXPECT_CONTAINS(r.out, "-Xclang gpumem.Memory:ReleaseFunctions=recycle,drop");
    EXPECT_CONTAINS(r.out, "-Xclang gpumem.Memory:OwnerFunctions=put");
    EXPECT_CONTAINS(r.out, "-Xclang gpumem.UncheckedStatus:LaunchChecks=MY_LAUNCH");
    EXPECT_CONTAINS(r.out, "-Xclang gpumem.VectorAlignment:Pedantic=true");
    EXPECT_CONTAINS(r.out, "--analyzer-output sarif");
    EXPECT_CONTAINS(r.out, "-Xclang -analyzer-disable-checker=deadcode,unix,cplusplus,security,nullability,optin,"
                           "core.CallAndMessage,core.UndefinedBinaryOperatorResult,core.uninitialized ");
    lint("--no-config", "--print-commands", "--noreturn-fn=my_die", "a.cu", NULL);
    EXPECT_CONTAINS(r.out, "-Xclang gpumem.Memory:NoReturnFunctions=error,fatal,fatal_error,die,"
                           "panic,my_die ");
    lint("--no-config", "--print-commands", "--disable=GM003,GM007", "a.cu", NULL);
    EXPECT_CONTAINS(r.out, "-analyzer-checker=gpumem.NeverReleased,gpumem.MismatchedRelease,"
                           "gpumem.UncheckedStatus,");
    EXPECT_TRUE(strstr(r.out, "gpumem.VectorAlignment") == NULL);
    EXPECT_TRUE(strstr(r.out, "ReleaseFunctions") == NULL);
}

static void test_derived_flags(void)
{
    fresh("derive");
    write_file("include/proj/api.h", "int api;\n");
    write_file("src/util/helper.cuh", "int helper;\n");
    write_file("src/main.cu", "#include \"proj/api.h\"\n#include \"helper.cuh\"\n"
                              "#include \"local.h\"\n#include <stdio.h>\nint x;\n");
    /* Through a header, and with angle brackets. */
    write_file("src/local.h", "#include <deep/inner.h>\nint local;\n");
    write_file("third/deep/inner.h", "int inner;\n");
    lint("--no-config", "--print-commands", ".", NULL);
    char inc[600], util[600], third[600];
    snprintf(third, sizeof third, "-I %s/derive/third ", root);
    EXPECT_CONTAINS(r.out, third);
    snprintf(inc, sizeof inc, "-I %s/derive/include ", root);
    snprintf(util, sizeof util, "-I %s/derive/src/util ", root);
    EXPECT_CONTAINS(r.out, inc);
    EXPECT_CONTAINS(r.out, util);
    EXPECT_EQ(count(r.out, "main.cu"), 1); /* headers are not units */
    EXPECT_TRUE(strstr(r.out, "-I ") && !strstr(r.out, "derive/src -I") );
}

/** Where @p needle first occurs in @p hay, as an offset (or a large number when absent). */
static size_t offset_of(const char *hay, const char *needle)
{
    const char *p = strstr(hay, needle);
    return p ? (size_t)(p - hay) : (size_t)-1;
}

static void test_user_flags_win(void)
{
    fresh("order");
    /* A Windows shim of a system header, a sample's copy of a helper the user has too, and a
     * header only the tree has. */
    write_file("win/unistd.h", "#error the shim\n");
    write_file("samples/common/helper_cuda.h", "int sample_copy;\n");
    write_file("mine/helper_cuda.h", "int users_copy;\n");
    write_file("third/only.h", "int only;\n");
    write_file("src/main.cu", "#include <unistd.h>\n#include \"helper_cuda.h\"\n"
                              "#include \"only.h\"\nint x;\n");
    char mine[600], third[600], shim[600], sample[600];
    snprintf(mine, sizeof mine, "-I%s/order/mine", root);
    lint("--no-config", "--print-commands", "src", "win", "samples", "third", "--", mine, NULL);
    EXPECT_EQ(r.rc, 0);
    snprintf(third, sizeof third, "-I %s/order/third ", root);
    snprintf(shim, sizeof shim, "%s/order/win", root);
    snprintf(sample, sizeof sample, "%s/order/samples", root);
    EXPECT_CONTAINS(r.out, third);          /* found only in the tree: derived */
    EXPECT_TRUE(strstr(r.out, shim) == NULL);   /* a system header's name: not derived */
    EXPECT_TRUE(strstr(r.out, sample) == NULL); /* on the user's -I: not derived */
    /* The user's folder is searched before the derived one. */
    EXPECT_TRUE(offset_of(r.out, mine) < offset_of(r.out, third));
    /* Without the user's flag, the sample's copy is the only one, and is derived. */
    lint("--no-config", "--print-commands", "src", "samples", NULL);
    EXPECT_CONTAINS(r.out, sample);
}

/* A named file below a repository's top finds the project's include/ at the top
 * (`gpumem lint examples/leak_hunt.c` in gpumem's own tree), but not above the top. */
static void test_include_up_to_repository_top(void)
{
    fresh("upward");
    write_file("include/above.h", "int above;\n"); /* outside the repository below */
    write_file("repo/.git/HEAD", "ref: refs/heads/main\n");
    write_file("repo/include/proj.h", "int proj;\n");
    write_file("repo/examples/app.c", "#include \"proj.h\"\n#include \"above.h\"\nint x;\n");
    lint("--no-config", "--print-commands", "repo/examples/app.c", NULL);
    char want[600];
    snprintf(want, sizeof want, "-I %s/upward/repo/include ", root);
    EXPECT_CONTAINS(r.out, want);
    snprintf(want, sizeof want, "%s/upward/include", root);
    EXPECT_TRUE(strstr(r.out, want) == NULL);
    /* Outside any repository, only the named file's own include/ is looked at. */
    write_file("plain/src/include/own.h", "int own;\n");
    write_file("plain/include/top.h", "int top;\n");
    write_file("plain/src/b.c", "#include \"own.h\"\n#include \"top.h\"\nint y;\n");
    lint("--no-config", "--print-commands", "plain/src/b.c", NULL);
    snprintf(want, sizeof want, "-I %s/upward/plain/src/include ", root);
    EXPECT_CONTAINS(r.out, want);
    snprintf(want, sizeof want, "%s/upward/plain/include", root);
    EXPECT_TRUE(strstr(r.out, want) == NULL);
}

static void test_nearest_header_derived(void)
{
    fresh("nearest");
    write_file("a/util.h", "int a;\n");
    write_file("b/inc/util.h", "int b;\n");
    write_file("b/src/main.cu", "#include <util.h>\nint x;\n");
    lint("--no-config", "--print-commands", ".", NULL);
    char b[600];
    snprintf(b, sizeof b, "-I %s/nearest/b/inc ", root);
    EXPECT_CONTAINS(r.out, b);
    EXPECT_EQ(count(r.out, "nearest/a"), 0);
}

static void test_omp_and_rdc(void)
{
    fresh("omp");
    write_file("a.cu", "#include <omp.h>\n__global__ void k(void) {}\nint x;\n");
    write_file("b.cpp", "int y;\n");
    lint("--no-config", "--print-commands", ".", NULL);
    EXPECT_EQ(r.rc, 0);
    /* A launch from device code needs relocatable device code: every CUDA unit has it. */
    EXPECT_EQ(count(r.out, "-fgpu-rdc"), 1);
    /* Device code's errors deferred, as a host-only run never emits that code. */
    EXPECT_EQ(count(r.out, "-fgpu-defer-diag"), 1);
    /* What GCC warns about and clang stops at: warnings, as the build has them. */
    EXPECT_CONTAINS(r.out, "-Wno-register ");
    EXPECT_CONTAINS(r.out, "-Wno-error=reserved-user-defined-literal ");
    write_file("old.c", "int z;\n");
    lint("--no-config", "--print-commands", "old.c", NULL);
    EXPECT_CONTAINS(r.out, " -x c -Wno-error=implicit-function-declaration ");
    lint("--no-config", "--print-commands", ".", NULL);
    glob_t g;
    if (glob("/usr/lib/gcc/*/*/include/omp.h", 0, NULL, &g) == 0 && g.gl_pathc) {
        char want[600];
        snprintf(want, sizeof want, "-isystem %s", g.gl_pathv[g.gl_pathc - 1]);
        *strrchr(want, '/') = '\0';
        EXPECT_CONTAINS(r.out, want);
        EXPECT_EQ(count(r.out, "/include/omp.h"), 0);
        EXPECT_EQ(count(r.out, want), 1); /* only the unit that includes it */
    }
    globfree(&g);
}

/* mpi.h, which MPI's packages install outside the default path, is found where they put it:
 * MPI_HOME first; only for the unit that includes it. */
static void test_mpi_header(void)
{
    fresh("mpi");
    write_file("home/include/mpi.h", "typedef int MPI_Comm;\n");
    write_file("a.cu", "#include <mpi.h>\nMPI_Comm c;\n");
    write_file("b.cu", "int y;\n");
    char home[600], want[700];
    snprintf(home, sizeof home, "%s/mpi/home", root);
    setenv("MPI_HOME", home, 1);
    lint("--no-config", "--print-commands", "a.cu", "b.cu", NULL);
    unsetenv("MPI_HOME");
    EXPECT_EQ(r.rc, 0);
    snprintf(want, sizeof want, "-isystem %s/include ", home);
    EXPECT_CONTAINS(r.out, want);
    EXPECT_EQ(count(r.out, want), 1);
    /* The user's folder comes first: no derived one then. */
    write_file("mine/mpi.h", "typedef int MPI_Comm;\n");
    setenv("MPI_HOME", home, 1);
    lint("--no-config", "--print-commands", "a.cu", "--", "-Imine", NULL);
    unsetenv("MPI_HOME");
    EXPECT_EQ(count(r.out, want), 0);
}

static void test_included_sources(void)
{
    fresh("incsrc");
    write_file("main.cu", "#include \"kernels.cu\"\n#include \"sub/ref.cpp\"\nint x;\n");
    write_file("kernels.cu", "__global__ void k(void) {}\n");
    write_file("sub/ref.cpp", "int ref;\n");
    write_file("other.cu", "int other;\n");
    write_file("cyc/a.cu", "#pragma once\n#include \"b.cu\"\n");
    write_file("cyc/b.cu", "#pragma once\n#include \"a.cu\"\n");
    lint("--no-config", "--print-commands", ".", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_EQ(count(r.out, "main.cu\n"), 1);
    EXPECT_EQ(count(r.out, "other.cu\n"), 1);
    EXPECT_EQ(count(r.out, "kernels.cu\n"), 0); /* compiled inside main.cu */
    EXPECT_EQ(count(r.out, "ref.cpp\n"), 0);
    EXPECT_EQ(count(r.out, "cyc/a.cu\n") + count(r.out, "cyc/b.cu\n"), 2); /* a cycle: both */
    /* Named on the command line, it is analyzed alone all the same. */
    lint("--no-config", "--print-commands", "main.cu", "kernels.cu", NULL);
    EXPECT_EQ(count(r.out, "kernels.cu\n"), 1);
}

/* A `.c` file its build compiles as CUDA (nvcc -x cu) shows it: a launch, a __global__
 * function, a C++ or CUDA header, in it or in a header of the tree it includes. It is
 * analyzed as CUDA, with a note saying why; C (also C written for C and C++ alike) stays C;
 * a compilation database's language wins. */
static void test_c_as_cuda(void)
{
    fresh("c-as-cuda");
    write_file("launch.c", "/* k<<<1, 1>>>() in a comment */\n"
                           "void run(void) {\n    k<<<1, 1>>>();\n}\n");
    write_file("hdr.c", "#include \"util/common.h\"\nint x;\n");
    write_file("util/common.h", "#pragma once\n\n#include <chrono>\n");
    write_file("plain.c", "#ifdef __cplusplus\n#include <cstdio>\nextern \"C\" {\n#endif\n"
                          "const char *s = \"<<<\";\n#if 0\n__global__ void k(void);\n#endif\n"
                          "#include <stdio.h>\nint y;\n#ifdef __cplusplus\n}\n#endif\n");
    lint("--no-config", "--print-commands", ".", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_EQ(count(r.out, "-x cuda "), 2);
    EXPECT_EQ(count(r.out, "-x c "), 1);
    char *plain = strstr(r.out, " -x c ");
    EXPECT_TRUE(plain && strstr(plain, "plain.c\n") && !strstr(plain, "launch.c"));
    EXPECT_CONTAINS(r.err, "gpumem lint: note: launch.c: analyzed as CUDA, as nvcc -x cu "
                           "compiles it: launch.c:3 launches a kernel (<<<) (with -p, the "
                           "compilation database gives each file's language)");
    EXPECT_CONTAINS(r.err, "gpumem lint: note: hdr.c: analyzed as CUDA, as nvcc -x cu compiles "
                           "it: util/common.h:3 includes <chrono>");
    EXPECT_TRUE(strstr(r.err, "plain.c") == NULL);
    lint("--no-config", "-q", "--print-commands", ".", NULL);
    EXPECT_EQ(count(r.out, "-x cuda "), 2);
    EXPECT_TRUE(strstr(r.err, "note:") == NULL);
    /* Analyzed (the stand-in reports), the note said on a real run too. */
    write_file("kernel.c", "__global__ void k(int *p) {}\n"
                           "int z; // FAKE: gpumem.NeverReleased leak\n");
    lint("--no-config", "kernel.c", NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_CONTAINS(r.out, "kernel.c:2:5:");
    EXPECT_CONTAINS(r.err, "kernel.c:1 declares a __global__ function");
    /* A database says how its build compiles each file. */
    char db[1024];
    snprintf(db, sizeof db, "[{\"directory\": \"%s/c-as-cuda\", \"file\": \"launch.c\", "
                            "\"command\": \"gcc -c launch.c\"}]", root);
    write_file("compile_commands.json", db);
    lint("--no-config", "--print-commands", "-p", ".", NULL);
    EXPECT_CONTAINS(r.out, " -x c ");
    EXPECT_TRUE(strstr(r.out, "-x cuda") == NULL);
    EXPECT_TRUE(strstr(r.err, "note:") == NULL);
}

/* Where a macro is defined only under a condition; which line is an #error. */
static void test_define_guard(void)
{
    struct lint_define_guard g;
    static const char text[] = "#ifndef A_H\n#define A_H\n#define TOP 1\n#ifdef FLOAT\n"
                               "#  define REAL \\\n float\n#if 0\n#endif\n#define AFTER 2\n"
                               "#endif\n#error stop\n#endif\n";
    memset(&g, 0, sizeof g);
    EXPECT_EQ(lint_define_guard(text, strlen(text), "REAL", 4, &g), 1);
    EXPECT_EQ(g.line, 5);
    EXPECT_EQ(g.cond_line, 4);
    EXPECT_STR_EQ(g.cond, "#ifdef FLOAT");
    EXPECT_EQ(g.in_else, 0);
    EXPECT_EQ(lint_define_guard(text, strlen(text), "AFTER", 5, &g), 1);
    EXPECT_EQ(g.line, 9);
    EXPECT_EQ(lint_define_guard(text, strlen(text), "TOP", 3, &g), 0);  /* include guard */
    EXPECT_EQ(lint_define_guard(text, strlen(text), "REA", 3, &g), 0);  /* whole names */
    EXPECT_EQ(lint_define_guard(text, strlen(text), "NONE", 4, &g), 0);
    EXPECT_EQ(lint_error_directive(text, strlen(text), 11), 1);
    EXPECT_EQ(lint_error_directive(text, strlen(text), 10), 0);
    EXPECT_EQ(lint_error_directive(text, strlen(text), 99), 0);
}

/* The signs, one by one: where they count and where they do not. */
static void test_cuda_sign(void)
{
    struct lint_cuda_sign s;
    static const struct {
        const char *text;
        int sign;
        unsigned line;
        const char *what;
    } cases[] = {
        {"#include <stdio.h>\n#include \"cuda_runtime.h\"\nint x;\n", 0, 0, ""},
        {"#include <cuda/std/atomic>\n", 1, 1, "includes <cuda/std/atomic>"},
        {"#include <cub/cub.cuh>\n", 1, 1, "includes <cub/cub.cuh>"},
        {"/* a\r\n b */\r\n#  include \"kernels.cu\"\r\n", 1, 3, "includes \"kernels.cu\""},
        {"#define A \\\n  1\n__global__ void k(void);\n", 1, 3, "declares a __global__ function"},
        {"int my__global__;\nint a = 1 << 2;\n", 0, 0, ""},
        {"char c = '<'; // <<<\nconst char *s = \"\\\"<<<\";\n", 0, 0, ""},
        {"#if defined(__CUDACC__)\n#include <vector>\n#elif 1\n#endif\nk<<<1,1>>>();\n", 1, 5,
         "launches a kernel (<<<)"},
        {"#ifndef __NVCC__\n#else\n#include <vector>\n#endif\n", 0, 0, ""},
        {"#if 0\n#include <vector>\n#endif\n", 0, 0, ""},
        {"#if 0x1\n#include <vector>\n#endif\n", 1, 2, "includes <vector>"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(&s, 0, sizeof s);
        int got = lint_cuda_sign(cases[i].text, strlen(cases[i].text), &s);
        EXPECT_EQ(got, cases[i].sign);
        if (got && cases[i].sign) {
            EXPECT_EQ(s.line, cases[i].line);
            EXPECT_STR_EQ(s.what, cases[i].what);
        }
    }
}

static void test_compdb(void)
{
    fresh("compdb");
    write_file("src/a.cu", leak_src);
    write_file("src/b.c", "int x; // FAKE: gpumem.NeverReleased leak\n");
    char db[4096];
    snprintf(db, sizeof db,
             "[{\"directory\": \"%s/compdb/build\", \"file\": \"../src/a.cu\", \"arguments\": "
             "[\"/usr/local/cuda/bin/nvcc\", \"-forward-unknown-to-host-compiler\", "
             "\"-DFOO=1\", \"-I../include\", \"-isystem\", \"/opt/x\", \"-arch\", \"sm_90\", "
             "\"--generate-code=arch=compute_90,code=[sm_90]\", \"-Xcompiler=-fPIC,-DBAR\", "
             "\"-Xcompiler\", \"-Wall\", \"-std=c++17\", \"-ccbin\", \"g++\", \"-x\", \"cu\", "
             "\"-c\", \"../src/a.cu\", \"-o\", \"a.o\"]},\n"
             " {\"directory\": \"%s/compdb/build\", \"file\": \"%s/compdb/src/b.c\", \"command\": "
             "\"gcc -O2 -I 'dir with space' -D\\\"Q=1\\\" -Wall -c ../src/b.c -o b.o\"},\n"
             " {\"directory\": \"%s/compdb/build\", \"file\": \"../src/a.cu\", \"command\": "
             "\"nvcc -DSECOND -c ../src/a.cu\"}]\n",
             root, root, root, root);
    write_file("build/compile_commands.json", db);
    lint("--no-config", "--print-commands", "-p", "build", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_EQ(count(r.out, "\n"), 2); /* the duplicate entry is dropped */
    EXPECT_TRUE(strstr(r.out, "SECOND") == NULL);
    EXPECT_CONTAINS(r.out, "-x cuda --cuda-host-only");
    EXPECT_CONTAINS(r.out, " -DFOO=1 ");
    char inc[600];
    snprintf(inc, sizeof inc, "-I %s/compdb/include ", root);
    EXPECT_CONTAINS(r.out, inc);
    EXPECT_CONTAINS(r.out, "-isystem /opt/x ");
    EXPECT_CONTAINS(r.out, " -DBAR ");
    EXPECT_CONTAINS(r.out, " -std=c++17 ");
    EXPECT_TRUE(strstr(r.out, "sm_90") == NULL);
    EXPECT_TRUE(strstr(r.out, "-fPIC") == NULL);
    EXPECT_TRUE(strstr(r.out, "-Wall") == NULL);
    EXPECT_TRUE(strstr(r.out, "g++") == NULL);
    EXPECT_TRUE(strstr(r.out, "forward-unknown") == NULL);
    EXPECT_TRUE(strstr(r.out, "a.o") == NULL);
    char sp[600];
    snprintf(sp, sizeof sp, "-I %s/compdb/build/dir with space ", root);
    EXPECT_CONTAINS(r.out, sp);
    EXPECT_CONTAINS(r.out, " -DQ=1 ");
    EXPECT_CONTAINS(r.out, " -x c ");
    /* The database's units, analyzed; PATHS pick among them. */
    lint("--no-config", "-p", "build/compile_commands.json", NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_CONTAINS(r.out, "src/a.cu:4:5:");
    EXPECT_CONTAINS(r.out, "src/b.c:1:5:");
    lint("--no-config", "--compile-commands=build", "src/b.c", NULL);
    EXPECT_TRUE(strstr(r.out, "a.cu") == NULL);
    EXPECT_CONTAINS(r.out, "src/b.c:1:5:");
    /* Errors: not JSON, not an array, a FIFO as the database or as an entry. */
    write_file("bad/compile_commands.json", "{");
    lint("--no-config", "-p", "bad", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "cannot read compilation database");
    write_file("obj.json", "{\"a\": 1}");
    lint("--no-config", "-p", "obj.json", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "a compilation database is a JSON array");
    mkfifo("fifo.json", 0600);
    lint("--no-config", "-p", "fifo.json", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "not a regular file");
    mkfifo("src/fifo.cu", 0600);
    snprintf(db, sizeof db, "[{\"directory\": \"%s/compdb\", \"file\": \"src/fifo.cu\", "
                            "\"command\": \"nvcc -c src/fifo.cu\"}, {\"directory\": \"%s/compdb\", "
                            "\"file\": \"src/b.c\", \"command\": \"cc -c src/b.c\"}, "
                            "{\"directory\": \"%s/compdb\", \"command\": \"cc\"}]",
             root, root, root);
    write_file("fifo-entry.json", db);
    lint("--no-config", "-p", "fifo-entry.json", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.err, "src/fifo.cu: not a regular file");
    EXPECT_CONTAINS(r.err, "entry 2 has no \"file\"");
    EXPECT_CONTAINS(r.out, "src/b.c:1:5:");
}

static void test_compdb_dedupe_many(void)
{
    /* 200 000 entries over 100 000 files, each file twice: every duplicate dropped. (How
     * long it takes is no test's business: 1.6 s measured, 52 s when it was quadratic.) */
    size_t n = 200000, cap = n * 96 + 16, k = 0;
    char *db = malloc(cap);
    ASSERT_NOT_NULL(db);
    db[k++] = '[';
    for (size_t i = 0; i < n; i++)
        k += (size_t)snprintf(db + k, cap - k,
                              "%s{\"directory\":\"/p\",\"file\":\"src/f%zu.cu\",\"command\":"
                              "\"nvcc -c src/f%zu.cu\"}",
                              i ? "," : "", i % (n / 2), i % (n / 2));
    db[k++] = ']';
    struct lint_options o;
    struct lint_units u = {0};
    lint_options_init(&o);
    EXPECT_EQ(lint_compdb_parse(&o, db, k, "big.json", &u), 0);
    EXPECT_EQ(u.n, n / 2);
    lint_units_free(&u);
    lint_options_free(&o);
    free(db);
}

static void test_fifo_and_deep_paths(void)
{
    fresh("fifo");
    write_file("a.cu", leak_src);
    mkfifo("pipe.cu", 0600);
    lint("--no-config", "pipe.cu", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.err, "pipe.cu: not a regular file");
    lint("--no-config", ".", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.err, "pipe.cu: not a regular file");
    EXPECT_CONTAINS(r.out, "a.cu:4:5:");
    fresh("deep");
    char path[4096] = ".";
    for (int i = 0; i < 300; i++) {
        strcat(path, "/d");
        mkdir(path, 0700);
        if (i == 60) {
            char f[4200];
            snprintf(f, sizeof f, "%s/mid.cu", path);
            write_file(f, leak_src);
        }
    }
    strcat(path, "/bottom.cu");
    write_file(path, leak_src);
    lint("--no-config", ".", NULL);
    EXPECT_EQ(r.rc, 3);
    EXPECT_CONTAINS(r.out, "/mid.cu:4:5:"); /* 61 levels deep: walked */
    EXPECT_CONTAINS(r.err, "nested deeper than 256 levels, not walked");
}

static void test_headers_merged_and_jobs(void)
{
    fresh("merge");
    write_file("inc/shared.cuh", "inline void h(float *p) {\n  cudaFree(p + 1);\n}\n");
    write_file("a.cu", "#include \"inc/shared.cuh\"\n// FAKE: gpumem.InteriorRelease at=inc/shared.cuh:2 interior pointer released\n");
    write_file("b.cu", "#include \"inc/shared.cuh\"\n// FAKE: gpumem.InteriorRelease at=inc/shared.cuh:2 interior pointer released\n");
    write_file("c.cu", leak_src);
    write_file("d.cu", "int x; // FAKE: gpumem.NeverReleased leak\n");
    lint("--no-config", "-j1", ".", NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_EQ(count(r.out, "interior pointer released [GM010]"), 1);
    EXPECT_CONTAINS(r.out, "inc/shared.cuh:2:5: warning: interior pointer released [GM010]\n"
                           "  cudaFree(p + 1);\n");
    char one[sizeof r.out];
    memcpy(one, r.out, sizeof one);
    lint("--no-config", "-j4", ".", NULL);
    /* Same report whatever -j (the summary's time aside). */
    char *t1 = strrchr(one, '('), *t2 = strrchr(r.out, '(');
    if (t1 && t2) {
        *t1 = *t2 = '\0';
        EXPECT_STR_EQ(one, r.out);
    }
    /* A finding in an excluded header is not reported. */
    lint("--no-config", "--exclude=inc/*", ".", NULL);
    EXPECT_EQ(count(r.out, "[GM010]"), 0);
    EXPECT_CONTAINS(r.out, "d.cu:1:5:");
    /* Ordered by file and line. */
    const char *pa = strstr(one, "c.cu:"), *pd = strstr(one, "d.cu:"),
               *ph = strstr(one, "inc/shared.cuh:");
    EXPECT_TRUE(pa && pd && ph && pa < pd && pd < ph);
}

static void test_robustness_inputs(void)
{
    /* Inputs that once stressed the old parser-based lint: the lexer, the caret and the
     * fingerprints must take them. */
    fresh("robust");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp %s/*.cu .", inputs);
    EXPECT_EQ(system(cmd), 0);
    lint("--no-config", "--format=sarif", ".", NULL);
    EXPECT_EQ(r.rc, 0);
    check_sarif(r.out, 0);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", inputs);
    const char *names[] = {"bad_utf8.cu", "deep_blocks.cu", "deep_parens.cu", "long_line.cu",
                           "many_allocs.cu", "many_gotos.cu", "nested_loops.cu", "unbalanced.cu"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *text, why_buf[64];
        size_t len;
        const char *why;
        ASSERT_EQ(lint_read_file(names[i], 1 << 24, &text, &len, &why, why_buf, sizeof why_buf),
                  0);
        struct lint_suppress s;
        EXPECT_EQ(lint_suppress_parse(text, len, &s), 0);
        EXPECT_GE(s.n_lines, 3);
        lint_suppress_free(&s);
        free(text);
    }
    /* A finding on a 260 KB line is shown without its text. */
    fresh("robust-long");
    char *big = malloc(300000);
    ASSERT_NOT_NULL(big);
    memset(big, 'x', 270000);
    memcpy(big, "int x; // FAKE: gpumem.NeverReleased leak ", 42);
    strcpy(big + 270000, "\n");
    write_file("long.cu", big);
    free(big);
    lint("--no-config", "long.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_CONTAINS(r.out, "long.cu:1:5: warning:");
    EXPECT_LE(strlen(r.out), 270000);
}

/** Control characters of a source line and of a message are written as escapes, never raw:
 *  a terminal would obey them (clear the screen, retitle the window); the caret stays under
 *  the finding's column. */
static void test_escapes_in_source(void)
{
    fresh("escapes");
    write_file("e.cu", "void f(unsigned n) {\n"
                       "    float *d;\n"
                       "    cudaMalloc(&d, n);\n"
                       "\x1b[2J if (n) return; /* \x1b]0;title\x07 \xc2\x9b" "2J */ // FAKE: "
                       "gpumem.EarlyExitLeak alloc=3 leaks \\u001b[31m'd'\n"
                       "}\n");
    lint("--no-config", "e.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_TRUE(strchr(r.out, '\x1b') == NULL);
    EXPECT_TRUE(strchr(r.out, '\x07') == NULL);
    EXPECT_TRUE(strstr(r.out, "\xc2\x9b") == NULL);
    EXPECT_CONTAINS(r.out, "e.cu:4:5: warning: leaks \\x1b[31m'd' [GM006]\n"
                           "\\x1b[2J if (n) return; /* \\x1b]0;title\\x07 \\xc2\\x9b2J */");
    EXPECT_CONTAINS(r.out, "'d'\n       ^\n"); /* under the space after "\x1b[2J" */
}

/** Whether file name holds exactly text. */
static int file_is(const char *name, const char *text)
{
    char buf[8192] = "";
    FILE *f = fopen(name, "rb");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strcmp(buf, text) == 0;
}

/** An -o that names an input of the run is refused, whatever spelling or link names it, and
 *  the input is left as it was: the configuration (found or given), a folder's compilation
 *  database, the baseline, a source. */
static void test_output_is_an_input(void)
{
    fresh("outputs");
    static const char cfg[] = "disable = GM003\n";
    write_file("a.cu", leak_src);
    write_file(".gpumem-lint", cfg);
    write_file("my.cfg", cfg);
    char db[1024];
    snprintf(db, sizeof db, "[{\"directory\": \"%s/outputs\", \"file\": \"a.cu\", "
             "\"command\": \"nvcc -c a.cu\"}]\n", root);
    write_file("build/compile_commands.json", db);
    lint("-o", ".gpumem-lint", "a.cu", NULL); /* the configuration the search found */
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "error: -o .gpumem-lint is the input ");
    EXPECT_CONTAINS(r.err, ".gpumem-lint (the configuration), which the report would overwrite");
    EXPECT_TRUE(file_is(".gpumem-lint", cfg));
    lint("--config", "my.cfg", "-o", "my.cfg", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "is the input my.cfg (the configuration)");
    EXPECT_TRUE(link("my.cfg", "hard.cfg") == 0);
    lint("--config", "my.cfg", "-o", "hard.cfg", "a.cu", NULL); /* a hard link: by identity */
    EXPECT_EQ(r.rc, 2);
    EXPECT_TRUE(file_is("my.cfg", cfg));
    lint("--no-config", "-p", "build", "-o", "build/compile_commands.json", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "(the compilation database)");
    lint("--no-config", "-p", "build/", "-o", "./build/../build/compile_commands.json", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_TRUE(file_is("build/compile_commands.json", db));
    lint("--no-config", "--format=sarif", "-o", "old.sarif", "a.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    lint("--no-config", "--baseline=old.sarif", "-o", "old.sarif", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2); /* the report would keep only what the baseline did not hide */
    EXPECT_CONTAINS(r.err, "is the input old.sarif (the baseline)");
    EXPECT_TRUE(symlink("a.cu", "link.cu") == 0);
    lint("--no-config", "-o", "link.cu", "a.cu", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "(a path given)");
    EXPECT_TRUE(file_is("a.cu", leak_src));
    lint("--no-config", "-o", "report.txt", "a.cu", NULL); /* not an input: written */
    EXPECT_EQ(r.rc, 1);
}

static void test_unit_helpers(void)
{
    char *p = lint_path_normalize("./a//b/./c/../d/");
    EXPECT_STR_EQ(p, "a/b/d");
    free(p);
    p = lint_path_normalize("/..//x/../../y");
    EXPECT_STR_EQ(p, "/y");
    free(p);
    p = lint_path_normalize("../../a/..");
    EXPECT_STR_EQ(p, "../..");
    free(p);
    p = lint_path_normalize("./");
    EXPECT_STR_EQ(p, ".");
    free(p);
    struct lint_strlist w = {0};
    lint_shell_split("nvcc -D'A B' \"-I x\" a\\ b \"q\\\"q\"", &w);
    EXPECT_EQ(w.n, 5);
    if (w.n == 5) {
        EXPECT_STR_EQ(w.v[1], "-DA B");
        EXPECT_STR_EQ(w.v[2], "-I x");
        EXPECT_STR_EQ(w.v[3], "a b");
        EXPECT_STR_EQ(w.v[4], "q\"q");
    }
    lint_strlist_free(&w);
    EXPECT_EQ(lint_rule_parse("GM011", 5), LINT_GM011);
    EXPECT_EQ(lint_rule_parse("gpumem.UncheckedStatus", 22), LINT_GM004);
    EXPECT_EQ(lint_rule_parse("UseAfterRelease", 15), LINT_GM009);
    EXPECT_EQ(lint_rule_parse("GM012", 5), -1);
    const char *keys[] = {"format", "fail-on"};
    EXPECT_STR_EQ(cli_suggest("fromat", 6, keys, 2), "format");
    EXPECT_NULL(cli_suggest("zzzzzz", 6, keys, 2));
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s FAKE_CLANG INPUTS_DIR\n", argv[0]);
        return 2;
    }
    static char fake_abs[4096], inputs_abs[4096];
    if (!realpath(argv[1], fake_abs) || !realpath(argv[2], inputs_abs)) {
        perror("realpath");
        return 2;
    }
    fake = fake_abs;
    inputs = inputs_abs;
    char tmpl[] = "/tmp/gpumem-lint-front-XXXXXX";
    if (!mkdtemp(tmpl))
        return 1;
    snprintf(root, sizeof root, "%s", tmpl);
    char plugin[300];
    snprintf(plugin, sizeof plugin, "%s/plugin.so", root);
    FILE *f = fopen(plugin, "w");
    if (f)
        fclose(f);
    RUN(test_unit_helpers);
    RUN(test_help_version_rules);
    RUN(test_usage_errors);
    RUN(test_text_and_paths);
    RUN(test_exit_statuses);
    RUN(test_not_analyzed);
    RUN(test_no_source);
    RUN(test_exclude_normalized);
    RUN(test_suppressions);
    RUN(test_cr_line_endings);
    RUN(test_json_structure);
    RUN(test_sarif_structure);
    RUN(test_baseline);
    RUN(test_config_search);
    RUN(test_config_errors);
    RUN(test_print_commands);
    RUN(test_derived_flags);
    RUN(test_user_flags_win);
    RUN(test_nearest_header_derived);
    RUN(test_include_up_to_repository_top);
    RUN(test_omp_and_rdc);
    RUN(test_mpi_header);
    RUN(test_included_sources);
    RUN(test_c_as_cuda);
    RUN(test_cuda_sign);
    RUN(test_define_guard);
    RUN(test_compdb);
    RUN(test_compdb_dedupe_many);
    RUN(test_fifo_and_deep_paths);
    RUN(test_headers_merged_and_jobs);
    RUN(test_robustness_inputs);
    RUN(test_output_is_an_input);
    RUN(test_escapes_in_source);
    if (chdir("/") == 0)
        nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return harness_exit();
}
