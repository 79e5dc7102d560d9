/* Internal interfaces of `gpumem lint`: options, findings, and the entry points that the
 * driver (lint.c), the rule modules (rules_*.c), the output writers (output.c), the test
 * programs and the fuzz harness share. Nothing here is part of the gpumem library. */
#ifndef GPUMEM_LINT_INTERNAL_H
#define GPUMEM_LINT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <tree_sitter/api.h>

#define LINT_VERSION "0.1.0"
/** Longest source line kept with a finding (for the caret line and the fingerprint). */
#define LINT_LINE_TEXT_MAX 512

/** Stable rule ids: the index is GMxxx minus one. Never renumber. */
enum lint_rule {
    LINT_GM001 = 0, /* allocation never released */
    LINT_GM002,     /* mismatched release */
    LINT_GM003,     /* misaligned vector view */
    LINT_GM004,     /* unchecked CUDA call */
    LINT_GM005,     /* allocation in a loop not released in the same iteration */
    LINT_GM006,     /* early exit leaks */
    LINT_GM007,     /* host read of write-combined memory */
    LINT_RULE_COUNT
};

enum lint_severity { LINT_NOTE = 0, LINT_WARNING = 1, LINT_ERROR = 2, LINT_NEVER = 3 };
enum lint_format { LINT_FORMAT_TEXT = 0, LINT_FORMAT_JSON, LINT_FORMAT_SARIF };

/** Metadata of one rule, for --help, --list-rules, JSON and SARIF. */
struct lint_rule_info {
    const char *id;    /**< "GM001" */
    const char *name;  /**< "allocation-never-released" (SARIF rule name) */
    const char *brief; /**< one line */
    const char *help;  /**< what to do about it */
};
extern const struct lint_rule_info lint_rules[LINT_RULE_COUNT];

/** A growable list of owned strings. */
struct lint_strlist {
    char **v;
    size_t n, cap;
};
void lint_strlist_add(struct lint_strlist *l, const char *s);
/** Makes room for element @p n of the array @p arr of @p *cap elements of @p size bytes:
 *  returns the array (moved, and @p *cap doubled, when it had to grow), or NULL when memory
 *  runs out, with @p arr and @p *cap unchanged. */
void *lint_array_grow(void *arr, size_t n, size_t *cap, size_t size);
/** Adds each comma- or space-separated item of @p s. */
void lint_strlist_add_split(struct lint_strlist *l, const char *s);
int lint_strlist_has(const struct lint_strlist *l, const char *s, size_t len);
void lint_strlist_free(struct lint_strlist *l);

/** Everything that changes what the linter reports. Built from defaults, then the config
 *  file, then the command line (later wins). */
struct lint_options {
    int format;                         /**< enum lint_format */
    int jobs;                           /**< worker threads, >= 1 */
    int fail_on;                        /**< enum lint_severity; LINT_NEVER: always exit 0 */
    int quiet;                          /**< no summary line, no skip messages */
    int show_notes;                     /**< print GM003 "not provable" notes */
    int enabled[LINT_RULE_COUNT];       /**< 1 when the rule runs */
    int severity[LINT_RULE_COUNT];      /**< severity of the rule's warnings */
    size_t max_file_size;               /**< bigger files are skipped */
    struct lint_strlist check_macros;   /**< calls whose argument counts as checked */
    struct lint_strlist launch_checks;  /**< calls that check a preceding kernel launch */
    struct lint_strlist owner_fns;      /**< calls that take ownership of pointer arguments */
    struct lint_strlist release_fns;    /**< calls that release their pointer arguments */
    struct lint_strlist exclude;        /**< fnmatch patterns of paths to skip */
    struct lint_strlist file_suppress;  /**< "GLOB:GM001,GM002" entries from the config */
    struct lint_strlist extensions;     /**< ".cu" ... for folder recursion */
};
void lint_options_init(struct lint_options *o);
void lint_options_free(struct lint_options *o);
/** Reads a config file (format in docs/lint.md). Returns 0, or -1 after printing why. */
int lint_config_load(struct lint_options *o, const char *path);
/** Applies one `key = value` option (shared by the config file and the command line).
 *  Returns 0, or -1 after printing an error that names @p where. */
int lint_option_set(struct lint_options *o, const char *key, const char *value, const char *where);
/** Parses "GM004" or "4" into a rule index; -1 when it is not a rule. */
int lint_rule_parse(const char *s, size_t len);
/** Parses "note|warning|error|never"; -1 otherwise. */
int lint_severity_parse(const char *s);
const char *lint_severity_name(int sev);
/** Parses sizes like "16MiB", "512k", "1000"; returns 0 on success. */
int lint_size_parse(const char *s, size_t *out);

/** One finding, with an optional related location (the allocation). Lines and columns are
 *  1-based; columns count bytes. */
struct lint_finding {
    int rule;
    int severity;
    uint32_t line, col, end_line, end_col;
    char *message;
    int has_related;
    uint32_t rel_line, rel_col;
    char *rel_message;
    char *function;  /**< enclosing function name, for fingerprints ("" at file scope) */
    char *line_text; /**< the source line of the finding, for carets and fingerprints */
};

/** What linting one file produced. */
struct lint_file_result {
    char *path;
    int skipped;       /**< 1 when the file was not analysed */
    char *skip_reason; /**< why, when skipped */
    size_t bytes;
    struct lint_finding *f;
    size_t n, cap;
};
void lint_result_free(struct lint_file_result *r);

/** Analyses one buffer (need not be NUL-terminated) as C, C++ or CUDA source and appends the
 *  findings that survive suppressions and options to @p out, sorted by position. @p parser is
 *  the caller's (one per thread). Never fails on odd input: a parse that tree-sitter gives up
 *  on yields no findings. */
void lint_analyze_buffer(const struct lint_options *o, TSParser *parser, const char *path,
                         const char *src, size_t len, struct lint_file_result *out);
/** Reads and analyses one file, or marks it skipped (unreadable, binary, too big). */
void lint_analyze_file(const struct lint_options *o, TSParser *parser, const char *path,
                       struct lint_file_result *out);

/** A new parser for the CUDA grammar, or NULL when the grammar and runtime disagree. */
TSParser *lint_parser_new(void);

/* ---- files.c ---- */
/** Adds the lintable files under @p path (a file is taken whatever its extension; folders
 *  are walked recursively, in name order, skipping hidden entries and symbolic links to
 *  folders). Returns 0, or -1 after printing why (the path does not exist). */
int lint_collect_path(const struct lint_options *o, const char *path, struct lint_strlist *files);
/** Adds the files of a compilation database (a file, or a folder holding
 *  compile_commands.json). Returns 0, or -1 after printing why. */
int lint_collect_compdb(const struct lint_options *o, const char *path, struct lint_strlist *files);
/** Reads a whole file. Returns 0 with a malloc'd buffer, or -1 with @p why set. */
int lint_read_file(const char *path, size_t max, char **buf, size_t *len, const char **why,
                   char *why_buf, size_t why_cap);

/* ---- output.c ---- */
struct lint_summary {
    size_t files, skipped, bytes;
    size_t count[LINT_ERROR + 1];
    double seconds;
};
/** Writes all results in the chosen format. Returns 0, or -1 on a write error. */
int lint_write(const struct lint_options *o, struct lint_file_result *res, size_t n,
               const struct lint_summary *sum, void *stream);

/* ---- internal to the analysis (analyze.c and rules_*.c) ---- */
struct lint_ctx;
void lint_report(struct lint_ctx *c, int rule, int severity, TSNode at, TSNode related,
                 const char *related_msg, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 7, 8)))
#endif
    ;

#endif
