/* The GPUMEM_CHECK_* variables (settings.def): written by `gpumem check` (launch.c), read here
 * by the library in every checked process. */
#include "settings.h"

#include <stdlib.h>

static const struct {
    const char *name, *meaning;
} settings[CHECK_SET_COUNT] = {
#define CHECK_SETTING(id, name, meaning) [CHECK_SET_##id] = {name, meaning},
#include "settings.def"
#undef CHECK_SETTING
};

const char *check_setting_name(check_setting s)
{
    return (unsigned)s < CHECK_SET_COUNT ? settings[s].name : NULL;
}

const char *check_setting_meaning(check_setting s)
{
    return (unsigned)s < CHECK_SET_COUNT ? settings[s].meaning : NULL;
}

const char *check_setting_get(check_setting s, const char *fallback)
{
    const char *name = check_setting_name(s);
    const char *v = name ? getenv(name) : NULL;
    return v && *v ? v : fallback;
}
