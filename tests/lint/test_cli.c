/* The command line of `gpumem lint`: every option, exit status, output format, suppression,
 * config file and error path, through gpumem_lint_main with stdout and stderr captured. */
#define _XOPEN_SOURCE 700
#include "../harness.h"
#include "../../tools/tool.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

static char dir[64];

struct run {
    int rc;
    char out[1 << 16];
    char err[1 << 14];
};
static struct run r;

static void slurp(int fd, char *buf, size_t cap)
{
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, buf, cap - 1);
    buf[n > 0 ? n : 0] = '\0';
}

/** Runs `gpumem lint ARGS...` (NULL-terminated) and keeps its status, stdout and stderr. */
static void lint(const char *first, ...)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)"lint";
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && argc < 63; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    char op[128], ep[128];
    snprintf(op, sizeof op, "%s/.stdout", dir);
    snprintf(ep, sizeof ep, "%s/.stderr", dir);
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
    slurp(fo, r.out, sizeof r.out);
    slurp(fe, r.err, sizeof r.err);
    close(fo);
    close(fe);
}

static const char *path(const char *name)
{
    static char buf[8][256];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void write_file(const char *name, const char *text)
{
    FILE *f = fopen(path(name), "wb");
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

static const char mismatch_src[] = "void f(unsigned n) {\n"
                                   "    float *h;\n"
                                   "    CUDA_CHECK(cudaMallocHost(&h, n));\n"
                                   "    CUDA_CHECK(cudaFree(h));\n"
                                   "}\n";
static const char clean_src[] = "void f(unsigned n) {\n"
                                "    float *d;\n"
                                "    CUDA_CHECK(cudaMalloc(&d, n));\n"
                                "    CUDA_CHECK(cudaFree(d));\n"
                                "}\n";

static void test_help_and_version(void)
{
    lint("--help", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, "usage: gpumem lint");
    EXPECT_CONTAINS(r.out, "GM007");
    EXPECT_CONTAINS(r.out, "--fail-on");
    EXPECT_CONTAINS(r.out, "gpumem-lint: ignore[GM004]");
    lint("-h", NULL);
    EXPECT_EQ(r.rc, 0);
    lint("--version", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, "gpumem lint 0.1.0");
    lint("--list-rules", NULL);
    EXPECT_EQ(r.rc, 0);
    for (int i = 1; i <= 7; i++) {
        char id[8];
        snprintf(id, sizeof id, "GM00%d", i);
        EXPECT_CONTAINS(r.out, id);
    }
}

static void test_usage_errors(void)
{
    lint(NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "no files or folders");
    lint("--frobnicate", path("a.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "unknown option '--frobnicate'");
    lint("--format", NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "needs a value");
    lint("--format=xml", path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "bad value 'xml' for 'format' (use text, json or sarif)");
    lint("--fail-on=sometimes", path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "command line: bad value 'sometimes' for 'fail-on' (use note,");
    lint("--disable", "GM999", path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "not a list of rules");
    lint("-j", "0", path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "-j: bad value '0' for 'jobs' (use a number from 1 to 256)");
    lint("-jx", path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "bad value 'x' for 'jobs'");
    lint("--max-file-size", "lots", path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "bad value 'lots' for 'max-file-size' (use a size such as");
    lint("--severity", "GM002", path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "bad value 'GM002' for 'severity' (use RULES:LEVEL");
    lint("--severity", "GM002:never", path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "bad value 'GM002:never' for 'severity'");
    lint("--severity", "GM9:error", path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "'GM9:error' is not a list of rules (GM001 to GM007)");
    lint(path("does-not-exist.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "does-not-exist.cu");
    lint("-o", "/nonexistent-dir/report.txt", path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "cannot write");
    /* A report that fails while it is written (SARIF, bigger than a stdio buffer) or when it
     * is closed (text) names the file and why. */
    if (access("/dev/full", W_OK) == 0) {
        lint("--format=sarif", "-o", "/dev/full", path("mismatch.cu"), NULL);
        EXPECT_EQ(r.rc, 2);
        EXPECT_CONTAINS(r.err, "cannot write /dev/full: No space left on device");
        lint("-o", "/dev/full", path("mismatch.cu"), NULL);
        EXPECT_EQ(r.rc, 2);
        EXPECT_CONTAINS(r.err, "cannot write /dev/full: No space left on device");
    }
}

static void test_text_output(void)
{
    lint(path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, "no findings in 1 file");
    lint(path("mismatch.cu"), NULL);
    EXPECT_EQ(r.rc, 1);
    char want[512];
    snprintf(want, sizeof want,
             "%s:4:16: warning: memory from cudaMallocHost released with cudaFree (release it "
             "with cudaFreeHost) [GM002]\n    CUDA_CHECK(cudaFree(h));\n               ^\n%s:3:16: "
             "note: allocated here with cudaMallocHost\n",
             path("mismatch.cu"), path("mismatch.cu"));
    EXPECT_CONTAINS(r.out, want);
    EXPECT_CONTAINS(r.out, "1 warning in 1 file");
    lint("-q", path("mismatch.cu"), NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_EQ(count(r.out, " in 1 file"), 0);
}

static void test_fail_on_and_severity(void)
{
    lint("--fail-on=error", path("mismatch.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    lint("--fail-on", "never", path("mismatch.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    lint("--severity", "GM002:error", "--fail-on=error", path("mismatch.cu"), NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_CONTAINS(r.out, ": error: memory from cudaMallocHost");
    write_file("note.cu", "__global__ void k(float *d, float4 *o, int i) { o[0] = *(float4 *)(d + i); }\n");
    lint(path("note.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, "note: float4 view of 'd' at a non-constant offset");
    EXPECT_CONTAINS(r.out, "0 warnings and 1 note");
    lint("--fail-on=note", path("note.cu"), NULL);
    EXPECT_EQ(r.rc, 1);
    lint("--no-notes", path("note.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, "no findings");
}

static void test_enable_disable(void)
{
    lint("--disable", "GM002", path("mismatch.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    lint("--disable=GM001,GM002", "--enable=2", path("mismatch.cu"), NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_CONTAINS(r.out, "[GM002]");
}

static void test_suppressions(void)
{
    write_file("supp.cu",
               "void f(float *d) {\n"
               "    cudaFree(d);  // gpumem-lint: ignore[GM004]\n"
               "    // gpumem-lint: ignore[GM004]\n"
               "    cudaFree(d);\n"
               "    cudaFree(d);  /* gpumem-lint: ignore */\n"
               "    cudaFree(d);  // gpumem-lint: ignore[GM001,GM002]\n"
               "    const char *s = \"// gpumem-lint: ignore[GM004]\"; cudaFree(d);\n"
               "    cudaFree(d);  // gpumem-lint: ignore[GM004]\n"
               "    cudaFree(d);\n"
               "}\n");
    lint(path("supp.cu"), NULL);
    EXPECT_EQ(r.rc, 1);
    /* not suppressed: line 6 (other rules), line 7 (a string, not a comment), line 9 (a
     * trailing comment covers only its own line) */
    EXPECT_EQ(count(r.out, ") [GM004]\n"), 3);
    EXPECT_CONTAINS(r.out, "supp.cu:6:5:");
    EXPECT_CONTAINS(r.out, "supp.cu:7:54:");
    EXPECT_CONTAINS(r.out, "supp.cu:9:5:");
    write_file("suppfile.cu", "// gpumem-lint: ignore-file[GM004]\n"
                              "void f(float *d) { cudaFree(d); cudaFree(d); }\n");
    lint(path("suppfile.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
}

static void test_config(void)
{
    write_file("cfg1", "# a comment\n"
                       "disable = GM004   # trailing comment\n"
                       "\n"
                       "severity = GM002: error\n");
    lint("--config", path("cfg1"), path("supp.cu"), path("mismatch.cu"), NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_EQ(count(r.out, "[GM004]"), 0);
    EXPECT_CONTAINS(r.out, ": error: memory from cudaMallocHost");
    /* the command line overrides the config */
    lint("--config", path("cfg1"), "--enable", "GM004", path("supp.cu"), NULL);
    EXPECT_EQ(count(r.out, ") [GM004]\n"), 3);

    write_file("cfg2", "suppress = *mismatch.cu: GM002\n");
    lint("--config", path("cfg2"), path("mismatch.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    write_file("cfg3", "suppress = *mismatch.cu\n");
    lint("--config", path("cfg3"), path("mismatch.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    write_file("cfg4", "exclude = *mismatch*\n");
    lint("--config", path("cfg4"), path("mismatch.cu"), path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, "in 1 file");

    write_file("bad1", "disable = GM003\nfrobnicate = yes\n");
    lint("--config", path("bad1"), path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "bad1:2: unknown option 'frobnicate'");
    write_file("bad2", "just words\n");
    lint("--config", path("bad2"), path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "expected 'key = value'");
    write_file("bad3", "\nnotes = maybe\n");
    lint("--config", path("bad3"), path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "bad3:2: bad value 'maybe' for 'notes' (use on or off)");
    lint("--config", path("no-such-config"), path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "cannot read config file");

    /* ./.gpumem-lint is read by default, and --no-config skips it */
    char cwd[512];
    ASSERT_NOT_NULL(getcwd(cwd, sizeof cwd));
    ASSERT_EQ(chdir(dir), 0);
    write_file(".gpumem-lint", "disable = GM002\n");
    lint("mismatch.cu", NULL);
    EXPECT_EQ(r.rc, 0);
    lint("--no-config", "mismatch.cu", NULL);
    EXPECT_EQ(r.rc, 1);
    unlink(".gpumem-lint");
    ASSERT_EQ(chdir(cwd), 0);
}

static void test_rule_options(void)
{
    write_file("owner.cu", "void pool_put(float *);\n"
                           "void f(unsigned n) {\n"
                           "    float *d;\n"
                           "    CUDA_CHECK(cudaMalloc(&d, n));\n"
                           "    pool_put(d);\n"
                           "}\n");
    lint(path("owner.cu"), NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_CONTAINS(r.out, "[GM001]");
    lint("--owner-fn", "pool_put", path("owner.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    write_file("release.cu", "void f(unsigned n) {\n"
                             "    float *d;\n"
                             "    CUDA_CHECK(cudaMalloc(&d, n));\n"
                             "    recycle(d);\n"
                             "}\n");
    lint(path("release.cu"), NULL);
    EXPECT_EQ(r.rc, 1);
    lint("--release-fn=recycle", path("release.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    write_file("launch.cu", "void f(float *d) {\n"
                            "    k<<<1, 32>>>(d);\n"
                            "    MY_LAUNCH_CHECK();\n"
                            "    CUDA_CHECK(cudaDeviceSynchronize());\n"
                            "    k<<<1, 32>>>(d);\n"
                            "    after_launch(\"k\");\n"
                            "    CUDA_CHECK(cudaDeviceSynchronize());\n"
                            "}\n");
    lint(path("launch.cu"), NULL);
    EXPECT_EQ(count(r.out, "[GM004]"), 2);
    lint("--check-macro", "MY_LAUNCH_CHECK", "--launch-check", "after_launch", path("launch.cu"),
         NULL);
    EXPECT_EQ(r.rc, 0);
}

static void test_json(void)
{
    lint("--format=json", path("mismatch.cu"), path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 1);
    json_error_t e;
    json_t *doc = json_loads(r.out, 0, &e);
    ASSERT_NOT_NULL(doc);
    json_t *f = json_array_get(json_object_get(doc, "findings"), 0);
    EXPECT_STR_EQ(json_string_value(json_object_get(f, "rule")), "GM002");
    EXPECT_STR_EQ(json_string_value(json_object_get(f, "severity")), "warning");
    EXPECT_EQ(json_integer_value(json_object_get(f, "line")), 4);
    EXPECT_EQ(json_integer_value(json_object_get(f, "column")), 16);
    EXPECT_STR_EQ(json_string_value(json_object_get(f, "function")), "f");
    json_t *rel = json_array_get(json_object_get(f, "related"), 0);
    EXPECT_EQ(json_integer_value(json_object_get(rel, "line")), 3);
    json_t *sum = json_object_get(doc, "summary");
    EXPECT_EQ(json_integer_value(json_object_get(sum, "files")), 2);
    EXPECT_EQ(json_integer_value(json_object_get(sum, "warnings")), 1);
    json_decref(doc);
}

static void test_sarif(void)
{
    lint("--format", "sarif", "-o", path("out.sarif"), path("mismatch.cu"), path("bin.cu"), NULL);
    EXPECT_EQ(r.rc, 1);
    json_error_t e;
    json_t *doc = json_load_file(path("out.sarif"), 0, &e);
    ASSERT_NOT_NULL(doc);
    EXPECT_STR_EQ(json_string_value(json_object_get(doc, "version")), "2.1.0");
    json_t *run = json_array_get(json_object_get(doc, "runs"), 0);
    json_t *driver = json_object_get(json_object_get(run, "tool"), "driver");
    EXPECT_STR_EQ(json_string_value(json_object_get(driver, "name")), "gpumem lint");
    EXPECT_EQ(json_array_size(json_object_get(driver, "rules")), 7);
    json_t *res = json_array_get(json_object_get(run, "results"), 0);
    EXPECT_STR_EQ(json_string_value(json_object_get(res, "ruleId")), "GM002");
    EXPECT_EQ(json_integer_value(json_object_get(res, "ruleIndex")), 1);
    EXPECT_STR_EQ(json_string_value(json_object_get(res, "level")), "warning");
    const char *fp =
        json_string_value(json_object_get(json_object_get(res, "partialFingerprints"),
                                          "gpumemLintHash/v1"));
    ASSERT_NOT_NULL(fp);
    EXPECT_EQ(strlen(fp), 18);
    json_t *loc = json_object_get(json_array_get(json_object_get(res, "locations"), 0),
                                  "physicalLocation");
    EXPECT_EQ(json_integer_value(json_object_get(json_object_get(loc, "region"), "startLine")), 4);
    EXPECT_CONTAINS(json_string_value(json_object_get(json_object_get(loc, "artifactLocation"),
                                                      "uri")),
                    "file:///tmp/");
    EXPECT_EQ(json_array_size(json_object_get(res, "relatedLocations")), 1);
    /* the skipped binary file is a notification */
    json_t *inv = json_array_get(json_object_get(run, "invocations"), 0);
    EXPECT_EQ(json_array_size(json_object_get(inv, "toolExecutionNotifications")), 1);
    json_decref(doc);

    /* The fingerprint survives lines added above the finding, and differs in another file. */
    char shifted[1024];
    snprintf(shifted, sizeof shifted, "// a new comment\n\n%s", mismatch_src);
    write_file("mismatch2.cu", mismatch_src);
    lint("--format=sarif", path("mismatch2.cu"), NULL);
    json_t *a = json_loads(r.out, 0, &e);
    write_file("mismatch2.cu", shifted);
    lint("--format=sarif", path("mismatch2.cu"), NULL);
    json_t *same = json_loads(r.out, 0, &e);
    write_file("shifted.cu", shifted);
    lint("--format=sarif", path("shifted.cu"), NULL);
    json_t *b = json_loads(r.out, 0, &e);
    ASSERT_NOT_NULL(a);
    ASSERT_NOT_NULL(same);
    ASSERT_NOT_NULL(b);
#define FP(doc)                                                                                  \
    json_string_value(json_object_get(                                                           \
        json_object_get(json_array_get(json_object_get(json_array_get(json_object_get(doc,      \
                                                                                      "runs"),  \
                                                                       0),                      \
                                                       "results"),                              \
                                       0),                                                      \
                        "partialFingerprints"),                                                 \
        "gpumemLintHash/v1"))
    ASSERT_NOT_NULL(FP(a));
    ASSERT_NOT_NULL(FP(same));
    ASSERT_NOT_NULL(FP(b));
    EXPECT_STR_EQ(FP(a), FP(same));
    EXPECT_TRUE(strcmp(FP(a), FP(b)) != 0); /* the path differs */
    json_decref(a);
    json_decref(same);
    json_decref(b);
}

static void test_skipping(void)
{
    lint(path("bin.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.err, "skipping");
    EXPECT_CONTAINS(r.err, "binary file");
    EXPECT_CONTAINS(r.out, "no findings in 0 files, 1 skipped");
    lint("--max-file-size", "10", path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.err, "too big");
    lint("--max-file-size=1MiB", path("clean.cu"), NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.out, "in 1 file");
    lint("/dev/null", NULL);
    EXPECT_EQ(r.rc, 0);
    EXPECT_CONTAINS(r.err, "not a regular file");
    lint("-q", path("bin.cu"), NULL);
    EXPECT_EQ(r.err[0], '\0');
}

static void test_folders(void)
{
    char sub[256];
    snprintf(sub, sizeof sub, "%s/tree", dir);
    mkdir(sub, 0700);
    snprintf(sub, sizeof sub, "%s/tree/sub", dir);
    mkdir(sub, 0700);
    snprintf(sub, sizeof sub, "%s/tree/.hidden", dir);
    mkdir(sub, 0700);
    write_file("tree/a.cu", mismatch_src);
    write_file("tree/notes.txt", mismatch_src);
    write_file("tree/sub/b.cuh", mismatch_src);
    write_file("tree/sub/c.cpp", clean_src);
    write_file("tree/.hidden/d.cu", mismatch_src);
    symlink("/nonexistent", path("tree/dangling.cu"));
    symlink(dir, path("tree/sub/loop"));
    lint(path("tree"), NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_CONTAINS(r.out, "2 warnings in 3 files");
    EXPECT_EQ(count(r.out, "notes.txt"), 0);
    EXPECT_EQ(count(r.out, ".hidden"), 0);
    lint("--extensions", ".txt", path("tree"), NULL);
    EXPECT_CONTAINS(r.out, "1 warning in 1 file");
    lint("--exclude", "*/sub*", path("tree"), NULL);
    EXPECT_CONTAINS(r.out, "1 warning in 1 file");
    /* -j does not change the output */
    lint("-j", "1", "--format=json", path("tree"), path("corpus-copy"), NULL);
    char one[sizeof r.out];
    memcpy(one, r.out, sizeof one);
    lint("-j2", "--format=json", path("tree"), path("corpus-copy"), NULL);
    json_error_t e;
    json_t *a = json_loads(one, 0, &e), *b = json_loads(r.out, 0, &e);
    ASSERT_NOT_NULL(a);
    ASSERT_NOT_NULL(b);
    json_object_del(json_object_get(a, "summary"), "seconds");
    json_object_del(json_object_get(b, "summary"), "seconds");
    EXPECT_TRUE(json_equal(a, b));
    EXPECT_GE(json_array_size(json_object_get(a, "findings")), 2);
    json_decref(a);
    json_decref(b);
}

static void test_compile_commands(void)
{
    char db[1024];
    snprintf(db, sizeof db,
             "[{\"directory\": \"%s\", \"file\": \"mismatch.cu\", \"command\": \"nvcc -c "
             "mismatch.cu\"},\n"
             " {\"directory\": \"/elsewhere\", \"file\": \"%s\", \"arguments\": [\"cc\"]},\n"
             " {\"directory\": \"%s\", \"file\": \"mismatch.cu\"},\n"
             " {\"directory\": \"%s\"}]\n",
             dir, path("clean.cu"), dir, dir);
    write_file("compile_commands.json", db);
    lint("-p", path("compile_commands.json"), NULL);
    EXPECT_EQ(r.rc, 1);
    EXPECT_CONTAINS(r.out, "1 warning in 2 files");
    EXPECT_CONTAINS(r.err, "has no \"file\"");
    lint("--compile-commands", dir, NULL); /* a folder holding compile_commands.json */
    EXPECT_EQ(r.rc, 1);
    write_file("bad.json", "[{\"file\": ");
    lint("-p", path("bad.json"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "cannot read compilation database");
    write_file("obj.json", "{\"file\": \"x.cu\"}");
    lint("-p", path("obj.json"), NULL);
    EXPECT_EQ(r.rc, 2);
    EXPECT_CONTAINS(r.err, "JSON array");
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

int main(int argc, char **argv)
{
    snprintf(dir, sizeof dir, "/tmp/gpumem-lint-test-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    write_file("mismatch.cu", mismatch_src);
    write_file("clean.cu", clean_src);
    FILE *b = fopen(path("bin.cu"), "wb");
    if (!b || fwrite("\x7f" "ELF\0\0\0\1cudaFree(p);", 1, 20, b) != 20 || fclose(b) != 0) {
        perror("bin.cu");
        return 1;
    }
    /* a copy of the corpus makes the -j comparison meaningful */
    char copy[512];
    snprintf(copy, sizeof copy, "%s/corpus-copy", dir);
    mkdir(copy, 0700);
    for (int i = 1; i < argc; i++) {
        FILE *in = fopen(argv[i], "rb");
        if (!in)
            continue;
        const char *base = strrchr(argv[i], '/');
        char dst[600];
        snprintf(dst, sizeof dst, "%s/%s", copy, base ? base + 1 : argv[i]);
        FILE *out = fopen(dst, "wb");
        char buf[4096];
        size_t n;
        while (out && (n = fread(buf, 1, sizeof buf, in)) > 0)
            fwrite(buf, 1, n, out);
        if (out)
            fclose(out);
        fclose(in);
    }
    RUN(test_help_and_version);
    RUN(test_usage_errors);
    RUN(test_text_output);
    RUN(test_fail_on_and_severity);
    RUN(test_enable_disable);
    RUN(test_suppressions);
    RUN(test_config);
    RUN(test_rule_options);
    RUN(test_json);
    RUN(test_sarif);
    RUN(test_skipping);
    RUN(test_folders);
    RUN(test_compile_commands);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return harness_exit();
}
