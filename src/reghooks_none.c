/* Sanitizer builds: no release hooks (reghooks.c says why), so the registration cache stays
 * off, as it would under a sanitizer's own free. An object with nothing in it but this note. */
typedef int gpumem__reghooks_none;
