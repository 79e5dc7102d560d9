/* Statistics, reports (golden text, JSON, at exit) and checkpoints, on the simulated device.
 * `test_report child MODE` is the child process the exit-report tests run. */
#define _GNU_SOURCE
#include <sys/wait.h>
#include <unistd.h>

#ifdef GPUMEM_HAVE_JANSSON
#include <jansson.h>
#endif

#include "gpumem.h"
#include "harness.h"
#include "report_scenario.h"

static const char *self;

/* Report text with the source folder removed from paths, so golden files hold "file.c:N". */
static char *capture_report(unsigned flags, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    *rc = gpumem_report(f, flags);
    fclose(f);
    char dir[512];
    const char *dir_end = strrchr(__FILE__, '/');
    size_t dir_len = dir_end ? (size_t)(dir_end - __FILE__) + 1 : 0;
    snprintf(dir, sizeof dir, "%.*s", (int)dir_len, __FILE__);
    for (char *p; dir_len && (p = strstr(buf, dir));)
        memmove(p, p + dir_len, strlen(p + dir_len) + 1);
    return buf;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void release_all(void *p[], int n)
{
    for (int i = 0; i < n; i++)
        gpumem_free(p[i]);
}

static void test_stats(void)
{
    gpumem_stats_t s0, s1, s2;
    ASSERT_EQ(gpumem_stats(&s0), GPUMEM_OK);
    void *p[6];
    scenario_leak(p);
    gpumem_stats(&s1);
    EXPECT_EQ(s1.count[0].current - s0.count[0].current, 6);
    EXPECT_EQ(s1.bytes[GPUMEM_KIND_DEVICE].current - s0.bytes[GPUMEM_KIND_DEVICE].current,
              3u << 20);
    EXPECT_EQ(s1.bytes[GPUMEM_KIND_PINNED].current, 4096);
    EXPECT_EQ(s1.bytes[GPUMEM_KIND_MANAGED].current, 4u << 20);
    EXPECT_EQ(s1.device_count[0].current - s0.device_count[0].current, 6);
    EXPECT_GE(s1.bytes[0].peak, s1.bytes[0].current);
    char *text = NULL;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    EXPECT_EQ(gpumem_stats_print(f), GPUMEM_OK);
    fclose(f);
    EXPECT_CONTAINS(text, "gpumem statistics");
    EXPECT_CONTAINS(text, "not all freed");
    EXPECT_CONTAINS(text, "device 0");
    free(text);
    release_all(p, 6);
    gpumem_stats(&s2);
    EXPECT_EQ(s2.count[0].current, s0.count[0].current);
    EXPECT_EQ(s2.count[0].total - s0.count[0].total, 6);
    EXPECT_EQ(s2.bytes[0].total - s0.bytes[0].total, (7u << 20) + 4096);
    EXPECT_GE(s2.bytes[0].peak, s1.bytes[0].current); /* the peak stays after release */
    gpumem_stats_reset_peak();
    gpumem_stats(&s2);
    EXPECT_EQ(s2.bytes[0].peak, s2.bytes[0].current);
    EXPECT_EQ(gpumem_stats(NULL), GPUMEM_EINVAL);
    EXPECT_EQ(gpumem_stats_print(NULL), GPUMEM_EINVAL);
}

static void test_report_golden(void)
{
    int rc;
    char *text = capture_report(GPUMEM_REPORT_FULL, &rc);
    EXPECT_EQ(rc, 0);
    EXPECT_STR_EQ(text, ""); /* nothing live: nothing said */
    free(text);
    void *p[6];
    scenario_leak(p);
    text = capture_report(GPUMEM_REPORT_FULL, &rc);
    EXPECT_EQ(rc, 6);
    EXPECT_STR_EQ(text, read_file(GOLDEN_DIR "/report_full.txt"));
    free(text);
    text = capture_report(GPUMEM_REPORT_SUMMARY, &rc);
    EXPECT_STR_EQ(text, read_file(GOLDEN_DIR "/report_summary.txt"));
    free(text);
    EXPECT_EQ(gpumem_report(NULL, 0), GPUMEM_EINVAL);
#ifdef GPUMEM_HAVE_JANSSON
    text = capture_report(GPUMEM_REPORT_FULL | GPUMEM_REPORT_JSON, &rc);
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    ASSERT_NOT_NULL(root);
    EXPECT_STR_EQ(json_string_value(json_object_get(root, "schema")), "gpumem.report");
    EXPECT_EQ(json_integer_value(json_object_get(root, "version")), 1);
    EXPECT_EQ(json_integer_value(json_object_get(root, "live_allocations")), 6);
    EXPECT_EQ(json_integer_value(json_object_get(root, "live_bytes")), (7 << 20) + 4096);
    json_t *sites = json_object_get(root, "sites");
    EXPECT_EQ(json_array_size(sites), 4);
    json_t *first = json_array_get(sites, 0);
    EXPECT_EQ(json_integer_value(json_object_get(first, "line")), 8);
    EXPECT_EQ(json_integer_value(json_object_get(first, "count")), 3);
    EXPECT_STR_EQ(json_string_value(json_object_get(first, "kind")), "device");
    EXPECT_EQ(json_array_size(json_object_get(first, "first_seq")), 3);
    EXPECT_TRUE(json_is_true(json_object_get(root, "complete")));
    json_decref(root);
    free(text);
#endif
    release_all(p, 6);
}

/* Runs `self child MODE` with env, returns its wait status; its stderr goes to err_path. */
static int run_child(const char *mode, char *const env[], const char *err_path)
{
    pid_t pid = fork();
    if (pid == 0) {
        FILE *e = freopen(err_path, "w", stderr);
        (void)e;
        for (char *const *v = env; *v; v++)
            putenv(*v);
        execl(self, self, "child", mode, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

static void test_exit_reports(void)
{
    char err_path[] = "/tmp/gpumem-report-err-XXXXXX";
    int fd = mkstemp(err_path);
    ASSERT_NE(fd, -1);
    close(fd);

    char *summary_env[] = {NULL};
    int st = run_child("leak", summary_env, err_path);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    EXPECT_CONTAINS(read_file(err_path), "gpumem: 6 allocations (7.0 MiB) still live at exit; "
                                         "GPUMEM_LEAK_REPORT=full shows where");

    char *full_env[] = {"GPUMEM_LEAK_REPORT=full", "GPUMEM_LEAK_EXITCODE=23", NULL};
    st = run_child("leak", full_env, err_path);
    EXPECT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 23);
    EXPECT_CONTAINS(read_file(err_path), "still live at exit, from 4 call sites:");
    EXPECT_CONTAINS(read_file(err_path), "3.0 MiB in 3 device allocations at ");

    char *clean_env[] = {"GPUMEM_LEAK_EXITCODE=23", NULL};
    st = run_child("clean", clean_env, err_path);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* no leak: status untouched */
    EXPECT_STR_EQ(read_file(err_path), "");

    char *off_env[] = {"GPUMEM_LEAK_REPORT=off", NULL};
    st = run_child("leak", off_env, err_path);
    EXPECT_STR_EQ(read_file(err_path), "");

    char *file_env[] = {"GPUMEM_REPORT_FILE=/tmp/gpumem-report-%p.txt", NULL};
    st = run_child("leak", file_env, err_path);
    EXPECT_STR_EQ(read_file(err_path), "");
    /* The report is in /tmp/gpumem-report-<child's pid>.txt; the child wrote its pid down. */
    char *named = read_file("/tmp/gpumem-report-child-pid.txt");
    ASSERT_NOT_NULL(named);
    char path[128];
    snprintf(path, sizeof path, "/tmp/gpumem-report-%s.txt", named);
    EXPECT_CONTAINS(read_file(path), "gpumem: 6 allocations (7.0 MiB) still live at exit");
    unlink(path);
    unlink("/tmp/gpumem-report-child-pid.txt");
    char *bt_env[] = {"GPUMEM_BACKTRACE=1", "GPUMEM_LEAK_REPORT=full", NULL};
    st = run_child("leak", bt_env, err_path);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
#ifdef GPUMEM_HAVE_LIBDW
    /* Each group shows its allocation stack, innermost first, gpumem's frames left out. */
    EXPECT_CONTAINS(read_file(err_path), "(scenario_leak): #1, #2, #3\n      at scenario_leak ("
                                         "");
    EXPECT_CONTAINS(read_file(err_path), "report_scenario.c:8)\n      by ");
    EXPECT_CONTAINS(read_file(err_path), "test_report.c:");
#endif
    EXPECT_TRUE(strstr(read_file(err_path), "gpumem_device_alloc_at") == NULL);
#ifdef GPUMEM_HAVE_JANSSON
    char *json_env[] = {"GPUMEM_REPORT_FORMAT=json", "GPUMEM_LEAK_REPORT=full", NULL};
    st = run_child("leak", json_env, err_path);
    json_error_t jerr;
    json_t *root = json_load_file(err_path, 0, &jerr);
    ASSERT_NOT_NULL(root);
    EXPECT_STR_EQ(json_string_value(json_object_get(root, "when")), "exit");
    EXPECT_EQ(json_integer_value(json_object_get(root, "live_allocations")), 6);
    json_decref(root);
#endif
    unlink(err_path);
}

static void test_checkpoints(void)
{
    gpumem_checkpoint_t cp = gpumem_checkpoint();
    EXPECT_EQ(cp.device, 0);
    void *leaked[100];
    for (int i = 0; i < 100; i++)
        leaked[i] = scenario_leaky_step(); /* leaks 1 MiB an iteration */
    gpumem_checkpoint_diff_t d;
    char *text = NULL;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    EXPECT_EQ(gpumem_checkpoint_diff(&cp, f, &d), GPUMEM_OK);
    fclose(f);
    EXPECT_EQ(d.count, 100);
    EXPECT_EQ(d.bytes, 100u << 20);
    EXPECT_EQ(d.sites, 1);
    EXPECT_EQ(d.device_known, 1);
    EXPECT_EQ(d.gpumem_device, 100 << 20);
    EXPECT_EQ(d.device_used, 100 << 20);
    EXPECT_EQ(d.unattributed, 0);
    EXPECT_CONTAINS(text, "100 allocations (100.0 MiB) made since the checkpoint are still live");
    EXPECT_CONTAINS(text, "100.0 MiB in 100 device allocations at ");
    EXPECT_CONTAINS(text, "report_scenario.c:16 (scenario_leaky_step)");
    free(text);
    release_all(leaked, 100);

    /* A clean loop reports nothing. */
    cp = gpumem_checkpoint();
    for (int i = 0; i < 100; i++)
        gpumem_free(scenario_leaky_step());
    EXPECT_EQ(gpumem_checkpoint_diff(&cp, NULL, &d), GPUMEM_OK);
    EXPECT_EQ(d.count, 0);
    EXPECT_EQ(d.sites, 0);
    EXPECT_EQ(d.device_used, 0);
    EXPECT_EQ(d.unattributed, 0);
    EXPECT_EQ(gpumem_checkpoint_diff(NULL, NULL, &d), GPUMEM_EINVAL);
}

static int child(const char *mode)
{
    void *p[6];
    FILE *f = fopen("/tmp/gpumem-report-child-pid.txt", "w");
    if (f) {
        fprintf(f, "%ld", (long)getpid());
        fclose(f);
    }
    scenario_leak(p);
    if (strcmp(mode, "clean") == 0)
        release_all(p, 6);
    return 0; /* returning from main runs the exit handlers */
}

int main(int argc, char **argv)
{
    self = argv[0];
    gpumem_backend_select("sim");
    if (argc == 3 && strcmp(argv[1], "child") == 0)
        return child(argv[2]);
    RUN(test_report_golden); /* first: its sequence numbers are fixed */
    RUN(test_stats);
    RUN(test_exit_reports);
    RUN(test_checkpoints);
    return harness_exit();
}
