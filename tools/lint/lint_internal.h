/* Internal interfaces of `gpumem lint`, the front end of gpumem's Clang Static Analyzer
 * checkers: the base every other piece uses (base.c: lists, paths, reading a file), options
 * and the config file (config.c), which files and flags (files.c, flags.c), suppression
 * comments (suppress.c), running the analyzer (runner.c), reading its SARIF (sarif_in.c), and
 * writing the report (output.c). lint.c is the command line. The
 * parsers take buffers so that the fuzz harnesses (fuzz/lint/) can drive them directly.
 * Nothing here is part of the gpumem library. */
#ifndef GPUMEM_LINT_INTERNAL_H
#define GPUMEM_LINT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* gpumem's version (include/gpumem.h), which the build passes in: lint has no version of its
 * own. */
#ifndef LINT_VERSION
#error "LINT_VERSION comes from the build (tools/lint/CMakeLists.txt, fuzz/lint/build.sh)"
#endif

/* Exit statuses: one table, used by lint.c and documented in docs/lint.md. */
enum lint_status {
    LINT_EXIT_OK = 0,         /* analyzed everything, no finding at or above --fail-on */
    LINT_EXIT_FINDINGS = 1,   /* findings at or above --fail-on */
    LINT_EXIT_USAGE = 2,      /* bad option, value, path, config, database or report file */
    LINT_EXIT_INCOMPLETE = 3, /* something was not analyzed (parse error, timeout, skipped
                                 file, no source found): the findings may be incomplete */
    LINT_EXIT_NO_ANALYZER = 77 /* cannot run here: clang-22 or the gpumem analyzer plugin is not
                                  installed (77, as every gpumem command that cannot run here) */
};

/** Stable rule ids, from analyzer/rules.def: the index is GMxxx minus one. Never renumber. */
enum lint_rule {
#define GPUMEM_RULE(id, checker, family, name, desc, brief, help) LINT_##id,
#include "analyzer/rules.def"
#undef GPUMEM_RULE
    LINT_RULE_COUNT
};
_Static_assert(LINT_GM001 == 0 && LINT_GM011 == 10, "rules.def lists GM001... in order");

enum lint_severity { LINT_NOTE = 0, LINT_WARNING = 1, LINT_ERROR = 2, LINT_NEVER = 3 };
enum lint_format { LINT_FORMAT_TEXT = 0, LINT_FORMAT_JSON, LINT_FORMAT_SARIF };
/** How much of the analyzer's path the text output shows. */
enum lint_path_mode { LINT_PATH_NONE = 0, LINT_PATH_SHORT, LINT_PATH_FULL };

/** Metadata of one rule, for --help, --list-rules, JSON and SARIF. */
struct lint_rule_info {
    const char *id;      /**< "GM001" */
    const char *checker; /**< "gpumem.NeverReleased": the analyzer's checker, its SARIF ruleId */
    const char *name;    /**< "allocation-never-released" (SARIF rule name) */
    const char *desc;    /**< "memory never released on some path" (--help's list) */
    const char *brief;   /**< one line */
    const char *help;    /**< what to do about it */
    int memory;          /**< a rule of gpumem.Memory's family: that checker's options apply */
};
extern const struct lint_rule_info lint_rules[LINT_RULE_COUNT];

/* ---- base.c: under everything else ---- */
/** A growable list of owned strings. */
struct lint_strlist {
    char **v;
    size_t n, cap;
};
/** Appends a copy of @p s; returns 0, or -1 when memory ran out (the list is unchanged). */
int lint_strlist_add(struct lint_strlist *l, const char *s);
int lint_strlist_addn(struct lint_strlist *l, const char *s, size_t len);
/** qsort's comparison of two strings (elements of type char *). */
int lint_str_cmp(const void *a, const void *b);
/** The next item of a comma- or space-separated list: its start and @p len, or NULL when
 *  the list at *@p s is used up. Moves *@p s past the item. */
const char *lint_list_next(const char **s, size_t *len);
/** Adds each comma- or space-separated item of @p s. */
void lint_strlist_add_split(struct lint_strlist *l, const char *s);
int lint_strlist_has(const struct lint_strlist *l, const char *s, size_t len);
void lint_strlist_free(struct lint_strlist *l);
/** Makes room for element @p n of @p arr (@p *cap elements of @p size bytes): returns the
 *  array, moved and grown when needed, or NULL when memory runs out (@p arr unchanged). */
void *lint_array_grow(void *arr, size_t n, size_t *cap, size_t size);
/** 64-bit FNV-1a of @p len bytes, continuing from @p h (start with LINT_FNV_SEED). */
#define LINT_FNV_SEED 14695981039346656037ull
uint64_t lint_fnv(uint64_t h, const void *s, size_t len);

/** Normalizes a path lexically: no "./", no "//", "a/../" folded; "" becomes ".". Returns a
 *  malloc'd string or NULL. */
char *lint_path_normalize(const char *path);
/** The absolute, normalized form of @p path; malloc'd or NULL. */
char *lint_path_absolute(const char *path);
/** Reads a whole regular file without blocking on FIFOs or devices. Returns 0 with a
 *  malloc'd, NUL-terminated buffer, or -1 with @p why (a static or @p why_buf string). */
int lint_read_file(const char *path, size_t max, char **buf, size_t *len, const char **why,
                   char *why_buf, size_t why_cap);
/** Seconds on the monotonic clock. */
double lint_now(void);

/* ---- config.c ---- */
/** Everything that changes what is analyzed and reported. Built from defaults, then the
 *  config file, then the command line (later wins). */
struct lint_options {
    int format;                        /**< enum lint_format */
    int jobs;                          /**< analyzer processes at once, >= 1 */
    int fail_on;                       /**< enum lint_severity; LINT_NEVER: findings exit 0 */
    int quiet;                         /**< no summary line, no messages about skips */
    int pedantic;                      /**< GM003 "alignment not provable" notes */
    int path_mode;                     /**< enum lint_path_mode, for text output */
    int timeout;                       /**< seconds per translation unit */
    int enabled[LINT_RULE_COUNT];      /**< 1 when the rule's checker runs */
    int enable_source;                 /**< where the last enable list came from: 0 none, 1 the
                                            config file, 2 the command line */
    int severity[LINT_RULE_COUNT];     /**< severity of the rule's findings */
    size_t max_file_size;              /**< bigger files are skipped */
    struct lint_strlist launch_checks; /**< calls that check a preceding kernel launch */
    struct lint_strlist owner_fns;     /**< calls that take ownership of pointer arguments */
    struct lint_strlist release_fns;   /**< calls that release their pointer arguments */
    struct lint_strlist noreturn_fns;  /**< error handlers that do not return */
    struct lint_strlist exclude;       /**< fnmatch patterns of paths to skip */
    struct lint_strlist file_suppress; /**< "GLOB:GM001,GM002" entries from the config */
    struct lint_strlist extensions;    /**< ".cu" ... taken from folders */
    char *clang;                       /**< --clang: the analyzer's driver, or NULL */
    char *plugin;                      /**< --analyzer-plugin, or NULL */
    char *baseline;                    /**< --baseline SARIF file, or NULL */
    char *config_dir;                  /**< folder of the config file read, or NULL */
};
void lint_options_init(struct lint_options *o);
void lint_options_free(struct lint_options *o);
/** Applies one `key = value` option (shared by the config file and the command line).
 *  Returns 0, or -1 after printing an error that names @p where. */
int lint_option_set(struct lint_options *o, const char *key, const char *value, const char *where);
/** The @p where of lint_option_set for an option of the command line (--KEY VALUE). */
#define LINT_WHERE_COMMAND_LINE "command line"
/** Parses a config file's text (format in docs/lint.md) into @p o; @p name names it in
 *  messages. Lines end with LF, CRLF or a bare CR and may be of any length; a NUL byte is an
 *  error. Returns 0, or -1 after printing why (file and line). */
int lint_config_parse(struct lint_options *o, const char *text, size_t len, const char *name);
/** Reads and parses a config file; a FIFO, a folder or anything but a regular file is an
 *  error. Returns 0 or -1 after printing why. */
int lint_config_load(struct lint_options *o, const char *path);
/** Looks for `.gpumem-lint` in @p start and its parents, up to the first folder holding
 *  `.git` or the filesystem root. Returns a malloc'd path, or NULL when there is none. */
char *lint_config_find(const char *start);
/** Parses "GM004", "4" or "gpumem.UncheckedStatus" into a rule index; -1 otherwise. */
int lint_rule_parse(const char *s, size_t len);
/** The rule whose checker is @p checker ("gpumem.NeverReleased"); -1 otherwise. */
int lint_rule_by_checker(const char *checker);
/** Parses "note|warning|error|never"; -1 otherwise. */
int lint_severity_parse(const char *s);
const char *lint_severity_name(int sev);
/** Parses sizes like "16MiB", "512k", "1000"; returns 0 on success. */
int lint_size_parse(const char *s, size_t *out);

/* ---- suppress.c ---- */
/** Bit of "every rule" in a suppression mask. */
#define LINT_SUPPRESS_ALL (1u << 31)
/** The suppressions of one source file: per 1-based line, a bit per rule. */
struct lint_suppress {
    uint32_t *line;  /**< line[k]: rules suppressed on line k */
    uint32_t n_lines;
    uint32_t file;   /**< rules suppressed in the whole file */
};
/** Finds the `gpumem-lint: ignore[...]` and `ignore-file[...]` comments of a C, C++ or CUDA
 *  source (in real comments only, not in strings), with lines counted as Clang counts them
 *  (LF, CRLF and bare CR each end a line). Returns 0, or -1 when memory ran out. */
int lint_suppress_parse(const char *src, size_t len, struct lint_suppress *out);
/** Whether @p rule is suppressed at @p line. */
int lint_suppressed(const struct lint_suppress *s, int rule, uint32_t line);
void lint_suppress_free(struct lint_suppress *s);
/** Rule bits of "[GM001,GM004]" (no list or "*": every rule). */
uint32_t lint_rule_mask(const char *s, const char *end);

/* ---- files.c ---- */
/** One translation unit to analyze: the file, its language, its flags. */
struct lint_unit {
    char *path;               /**< as shown in the report (normalized, relative to cwd when
                                   under it) */
    char *abs;                /**< absolute, normalized */
    char *lang;               /**< "cuda", "c" or "c++" */
    struct lint_strlist args; /**< compiler flags (include paths, macros, -std) */
    int from_db;              /**< 1 when the flags came from a compilation database */
    char *skip;               /**< why the unit is not analyzed, or NULL */
    int named;                /**< 1 when named on the command line (not found by a walk) */
    char *as_cuda;            /**< a `.c` unit analyzed as CUDA: why ("FILE:LINE launches a
                                   kernel (<<<)"), or NULL */
};
struct lint_units {
    struct lint_unit *v;
    size_t n, cap;
    struct lint_strlist headers; /**< absolute paths of the headers seen while walking */
    struct lint_strlist skipped; /**< "PATH: why" for things that were not collected */
    struct lint_strlist roots;   /**< absolute folders walked (for deriving flags) */
};
/** Frees what one unit holds (not the unit itself). */
void lint_unit_free(struct lint_unit *x);
void lint_units_free(struct lint_units *u);
/** Writes s with control characters as escapes (\\n, \\t, \\xNN): a file name that holds a
 *  newline cannot make a line of its own in text output. */
void lint_fputs_visible(FILE *out, const char *s);
/** How a path is shown: relative to the current folder when under it, else absolute. */
char *lint_path_display(const char *abs);
/** Whether the options exclude @p abs (patterns match the shown path, the absolute path and
 *  the path relative to the config file's folder). */
int lint_excluded(const struct lint_options *o, const char *abs);
/** The language of a file name by its extension: "cuda", "c", "c++", or NULL for a header. */
const char *lint_unit_lang(const char *name);
/** Adds the units under @p path (a file is taken whatever its extension; folders are walked
 *  recursively in name order, skipping hidden entries and links to folders). Returns 0, or -1
 *  after printing why (the path does not exist). Things skipped go to @p u->skipped. */
int lint_collect_path(const struct lint_options *o, const char *path, struct lint_units *u);
/** Parses a compilation database's text into units (flags translated for clang, nvcc's
 *  included; duplicate files dropped in linear time). @p name names it in messages.
 *  Returns 0, or -1 after printing why. */
int lint_compdb_parse(const struct lint_options *o, const char *text, size_t len,
                      const char *name, struct lint_units *u);
/** Reads a compilation database (a file, or a folder holding compile_commands.json). */
int lint_collect_compdb(const struct lint_options *o, const char *path, struct lint_units *u);
/** Translates one compile command's arguments (argv[0] the compiler) into clang flags that
 *  matter to analysis; relative include paths are made absolute against @p dir. */
void lint_translate_args(char **argv, size_t argc, const char *dir, struct lint_strlist *out,
                         const char **lang);
/** Splits a shell command line into words (quotes and backslashes as sh does). */
int lint_shell_split(const char *s, struct lint_strlist *out);

/* ---- flags.c ---- */
/** The CUDA toolkit's root ($CUDAToolkit_ROOT, $CUDA_HOME, /usr/local/cuda, /usr/lib/cuda,
 *  /usr: the first with include/cuda_runtime_api.h), or NULL. */
const char *lint_cuda_root(void);
/** Adds, to each unit without flags from a database, -I for the folders of the walked tree
 *  that hold the headers it includes and the compiler would not find otherwise (beside the
 *  includer, in @p user_flags' folders, among the system's), and GCC's omp.h folder when it
 *  includes omp.h; drops the walked units that another unit includes. A `.c` unit whose
 *  text or tree headers show it is CUDA or C++ (lint_cuda_sign) becomes a CUDA unit, as
 *  `nvcc -x cu` compiles it, with @c as_cuda saying why. */
void lint_derive_flags(struct lint_units *u, const struct lint_strlist *user_flags);

/* ---- hints.c ---- */
/** The preprocessor directive on the line [p, eol): its word after `#` (letters only) and
 *  where what follows it starts, blanks skipped; 0 when the line is not a directive. */
int lint_directive(const char *p, const char *eol, const char **word, size_t *wl,
                   const char **rest);
/** The header an include names, from @p p (after the word `include`) to @p eol: its name
 *  without the delimiters and the closing one ('>' or '"'); 0 when there is none. */
int lint_include_target(const char *p, const char *eol, const char **name, size_t *nlen,
                        char *close);
/** A sign, in a source's text, that it is CUDA or C++ and not C. */
struct lint_cuda_sign {
    uint32_t line;  /**< 1-based, as clang counts lines */
    char what[160]; /**< "launches a kernel (<<<)", "includes <chrono>" ... */
};
/** Looks for a kernel launch, a `__global__` function or an include of a C++ or CUDA header,
 *  outside comments, strings and `#if` blocks that test for C++ or CUDA. Returns 1 with the
 *  first one in @p out, or 0. */
int lint_cuda_sign(const char *text, size_t len, struct lint_cuda_sign *out);
/** Where a source defines a macro only under a condition. */
struct lint_define_guard {
    uint32_t line;      /**< of the #define */
    uint32_t cond_line; /**< of the condition */
    int in_else;        /**< 1 when the #define is in the #else branch of @c cond */
    char cond[200];     /**< "#if defined(NCCL_OS_LINUX)", "#elif ...", "#ifdef FLOAT" */
};
/** Finds the first `#define NAME` in @p text: returns 1 with the innermost condition it is
 *  under (include guards aside), 0 when there is none or it is defined unconditionally. */
int lint_define_guard(const char *text, size_t len, const char *name, size_t nlen,
                      struct lint_define_guard *out);
/** Whether line @p line (1-based) of @p text is an `#error` directive. */
int lint_error_directive(const char *text, size_t len, uint32_t line);

/* ---- findings (sarif_in.c) ---- */
/** A location with a message: a step of the path, or a related location. */
struct lint_loc {
    char *file; /**< shown path */
    uint32_t line, col;
    char *message;
    int importance; /**< 2 essential, 1 important, 0 unimportant */
};
struct lint_finding {
    int rule;
    int severity;
    char *file; /**< shown path */
    uint32_t line, col, end_line, end_col;
    char *message;
    char *issue_hash;       /**< clang's partialFingerprints issue hash, or NULL */
    char fingerprint[40];   /**< gpumem's, set before output */
    struct lint_loc *path;  /**< the analyzer's path (codeFlows), in order */
    size_t n_path;
    struct lint_loc *related; /**< "allocated here", "released here" */
    size_t n_related;
    size_t unit; /**< index of the unit that produced it */
};
struct lint_findings {
    struct lint_finding *v;
    size_t n, cap;
};
void lint_finding_free(struct lint_finding *f);
void lint_findings_free(struct lint_findings *f);
/** Appends the gpumem results of one SARIF document (clang's --analyzer-output sarif) to
 *  @p out: results whose ruleId is not a gpumem checker are dropped. Returns 0, or -1 when
 *  the text is not such a document (after filling @p why). */
int lint_sarif_parse(const char *text, size_t len, size_t unit, struct lint_findings *out,
                     char *why, size_t why_cap);
/** Adds the fingerprints (partialFingerprints "gpumemLintHash/v2") of an earlier report to
 *  @p out. Returns 0, or -1 after filling @p why. */
int lint_baseline_parse(const char *text, size_t len, struct lint_strlist *out, char *why,
                        size_t why_cap);

/* ---- runner.c ---- */
/** What running the analyzer on one unit gave. */
struct lint_unit_result {
    int status;     /**< 0 analyzed; otherwise not (see @c error) */
    char *error;    /**< why it was not analyzed: clang's first error, a timeout, ... */
    char *sarif;    /**< the SARIF text, malloc'd */
    size_t sarif_len;
    double seconds;
};
struct lint_run {
    const char *clang;  /**< driver */
    const char *plugin; /**< the checker plugin, or NULL (clang's checkers only, for timing) */
    struct lint_strlist extra; /**< flags after `--` */
    int progress;              /**< print [k/n] on stderr */
};
/** The analyzer's argument vector for one unit (without the output file), for tests and
 *  for --print-commands; NULL-terminated, malloc'd strings. @p facts_out, where the unit's
 *  facts go, and @p facts_in, the merged facts of the other units, may be NULL (facts.c). */
void lint_unit_argv(const struct lint_options *o, const struct lint_run *r,
                    const struct lint_unit *u, const char *sarif_out, const char *facts_out,
                    const char *facts_in, struct lint_strlist *argv);
/** Runs the analyzer on every unit, o->jobs at a time. @p res has one entry per unit.
 *  Returns 0, or -1 after printing why nothing could run (temporary folder, spawn). */
int lint_run_units(const struct lint_options *o, const struct lint_run *r,
                   const struct lint_units *u, struct lint_unit_result *res);

/* ---- facts.c ---- */
/** Merges the facts files TMP/I.facts of the units analyzed (@p analyzed[i]) into @p out, and
 *  sets @p rerun[i] for each unit that calls a function another unit defines with facts.
 *  Returns how many units are to be analyzed again, or -1 when @p out cannot be written. */
int lint_facts_merge(const char *tmp, size_t n, const unsigned char *analyzed, const char *out,
                     unsigned char *rerun);

/* ---- output.c ---- */
struct lint_summary {
    size_t units, not_analyzed, skipped, baseline_hidden, merged;
    size_t count[LINT_ERROR + 1];
    double seconds;
};
/** Sorts, merges (one finding seen through several units) and fingerprints the findings. */
void lint_findings_finish(struct lint_findings *f, struct lint_summary *sum);
/** Writes everything in the chosen format. @p problems lists "PATH: why" for what was not
 *  analyzed. Returns 0, or -1 on a write error. */
int lint_write(const struct lint_options *o, const struct lint_findings *f,
               const struct lint_strlist *problems, const struct lint_summary *sum, void *stream);

int gpumem_lint_main(int argc, char **argv);

#endif
