/* The GPUMEM_CHECK_* variables `gpumem check` sets and the library reads (settings.def). */
#ifndef GPUMEM_CHECK_SETTINGS_H
#define GPUMEM_CHECK_SETTINGS_H

typedef enum {
#define CHECK_SETTING(id, name, dflt, choices, meaning) CHECK_SET_##id,
#include "settings.def"
#undef CHECK_SETTING
    CHECK_SET_COUNT
} check_setting;

/* The variable's name ("GPUMEM_CHECK_LEAK"). */
const char *check_setting_name(check_setting s);
/* What it means, for documentation and messages. */
const char *check_setting_meaning(check_setting s);
/* Its value in this process's environment, or fallback when it is unset or empty. */
const char *check_setting_get(check_setting s, const char *fallback);
/* Its value, or its default (settings.def) when unset or empty; NULL when it has none. */
const char *check_setting_value(check_setting s);
/* The words it takes, "a|b|c" ("" for a value of another form). */
const char *check_setting_choices(check_setting s);
/* Its default, or NULL. */
const char *check_setting_default(check_setting s);
/* The index of word among choices ("no|summary|full": "summary" is 1), or -1. */
int check_choice_index(const char *choices, const char *word);
/* Its value's index among its choices; where the value is none of them (set by hand), its
 * default's. */
int check_setting_choice(check_setting s);

/* A path setting (GPUMEM_CHECK_LOG, _JSON, _TRACE, _STATUS) made absolute: a relative one is
 * taken from the folder the process started in (check_settings_start_dir), or, in a process
 * that never called it, the folder it is in at the first call; NULL when unset. `gpumem check`
 * gives absolute paths; a relative one comes from setting the variables by hand. */
const char *check_setting_path(check_setting s);
/* Notes the folder the process is in now as its start folder (the preloaded library's
 * constructor, before the program runs). */
void check_settings_start_dir(void);

#endif
