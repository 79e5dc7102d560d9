/* Suppression files of gpumem check (docs/check.md has the format):
 *
 *   {
 *      name of the suppression
 *      gpumem:KIND            finding kind (check_kind_name) or *
 *      call:PATTERN           optional: the release, allocation or failed call
 *      fun:PATTERN            frames, innermost first: function name,
 *      src:PATTERN            file:line (the file's last path component),
 *      obj:PATTERN            or object path; `...` stands for any number of frames
 *   }
 *
 * PATTERNs are shell globs (*, ?, [...] and \ escapes, as fnmatch), matched in linear time. A suppression matches a finding when its kind and call
 * match and its frame lines match the innermost frames of the finding's stack. */
#ifndef GPUMEM_CHECK_SUPPRESS_H
#define GPUMEM_CHECK_SUPPRESS_H

#include <stdio.h>

#include "backtrace.h"

/* Adds the suppressions in the file at path. Returns 0, or -1 with a message ("FILE:LINE:
 * what is wrong") in err. On error nothing of that file is kept. Anything but a regular file
 * (a FIFO, a folder, a device) is refused without blocking. Not thread-safe: call before
 * events arrive. */
int check_supp_load(const char *path, char *err, size_t n);
/* The name of the first suppression matching the finding, or NULL; counts its use. */
const char *check_supp_match(int kind, const char *call, const gpumem__frame *frames, int n);
/* Counts a use of the suppression called name, as check_supp_match does when it matches, and
 * returns its name (NULL when there is none so called). Takes no lock and never allocates:
 * the crash-time report counts matches made in its symbolizing child with it. */
const char *check_supp_use(const char *name);
/* Writes one suppression that matches the finding, for --gen-suppressions; the call and
 * function names are escaped, so it matches even where they hold glob characters. */
void check_supp_generate(FILE *out, int kind, const char *call, const gpumem__frame *frames,
                         int n);
/* Writes "used suppression: COUNT NAME" lines, each prefixed, into a signal-safe sink (the
 * report at exit and after a signal). */
struct gpumem__sink;
void check_supp_sink_used(struct gpumem__sink *o, const char *prefix);
/* Forgets every suppression (tests). */
void check_supp_clear(void);

#endif
