/* The GPUMEM_CHECK_* variables `gpumem check` sets and the library reads (settings.def). */
#ifndef GPUMEM_CHECK_SETTINGS_H
#define GPUMEM_CHECK_SETTINGS_H

typedef enum {
#define CHECK_SETTING(id, name, meaning) CHECK_SET_##id,
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

#endif
