/* The GPUMEM_CHECK_* variables (settings.def): written by `gpumem check` (launch.c), read here
 * by the library in every checked process. */
#define _GNU_SOURCE
#include "settings.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

/* The folder the process started in: where a relative path in a setting is taken from, also
 * when the program changes its folder before it writes its report. */
static char start_dir[PATH_MAX];

void check_settings_start_dir(void)
{
    if (!start_dir[0] && !getcwd(start_dir, sizeof start_dir))
        start_dir[0] = '\0';
}

const char *check_setting_path(check_setting s)
{
    static char absolute[CHECK_SET_COUNT][PATH_MAX * 2];
    const char *v = check_setting_get(s, NULL);
    if (!v || v[0] == '/' || (unsigned)s >= CHECK_SET_COUNT)
        return v;
    check_settings_start_dir(); /* not preloaded: the folder at CUDA's start */
    if (!start_dir[0])
        return v;
    int n = snprintf(absolute[s], sizeof absolute[s], "%s/%s", start_dir, v);
    return n > 0 && (size_t)n < sizeof absolute[s] ? absolute[s] : v;
}
