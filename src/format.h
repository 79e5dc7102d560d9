/* Text chores that messages, reports and traces share (internal, gpumem__ prefix): JSON
 * strings, terminal-safe text, UTF-8 cuts, file names with %p, decimal numbers. All but
 * gpumem__utf8_valid_dup are async-signal-safe: the sinks of sigsafe.h write with them from
 * signal handlers. This header stands below sigsafe.h. */
#ifndef GPUMEM_FORMAT_H
#define GPUMEM_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* The most bytes gpumem__json_piece writes for one piece (an escaped U+FFFD is 6). */
#define GPUMEM__JSON_PIECE_MAX 8
/* The JSON string text of the next piece of s (s[0] is not NUL): one character, escaped when
 * JSON asks (quote, backslash, control characters), or an escaped U+FFFD for a sequence that
 * is not UTF-8. Sets *took to the bytes of s it stands for; returns the bytes written to out.
 * The one JSON string escaper of gpumem: every JSON string is written with it. */
size_t gpumem__json_piece(const char *s, char out[GPUMEM__JSON_PIECE_MAX], size_t *took);
/* The most bytes gpumem__visible_piece writes for one piece (a C1 control in UTF-8 is 8). */
#define GPUMEM__VISIBLE_PIECE_MAX 8
/* The terminal-safe text of the next piece of s (s[0] is not NUL): a character as it is, or,
 * for a control character (C0, DEL, C1), its escape: \n, \t or \xNN for each of its bytes.
 * Sets *took to the bytes of s it stands for; returns the bytes written to out. The one rule
 * of gpumem's text outputs for text that comes from outside. */
size_t gpumem__visible_piece(const char *s, char out[GPUMEM__VISIBLE_PIECE_MAX], size_t *took);
/* s made visible (gpumem__visible_piece) into out, cut at a piece to fit cap bytes with the
 * NUL; returns the length written. */
size_t gpumem__visible(const char *s, char *out, size_t cap);
/* len, less a multi-byte character cut short at the end of s[0..len): where text is cut to
 * fit a buffer, this cuts it at a character boundary. */
size_t gpumem__utf8_whole(const char *s, size_t len);
/* A malloc'd copy of s that is valid UTF-8: each sequence that is not becomes U+FFFD, by the
 * rule gpumem__json_piece follows. For JSON libraries that refuse other text (jansson). Not
 * async-signal-safe (it allocates); NULL without memory. */
char *gpumem__utf8_valid_dup(const char *s);
/* pattern with every "%p" replaced by pid and, with add_pid when there is no %p, ".PID"
 * appended, into out (cap bytes, NUL included). Returns the length of the whole name; when
 * that is cap or more, out is "": a file name is never shortened into another name. */
size_t gpumem__path_expand(const char *pattern, long pid, int add_pid, char *out, size_t cap);

/* Decimal text of v into buf (at least 21 bytes); returns buf. */
char *gpumem__fmt_u64(uint64_t v, char *buf);

#endif
