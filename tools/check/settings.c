/* The GPUMEM_CHECK_* variables (settings.def): written by `gpumem check` (launch.c), read here
 * by the library in every checked process. */
#define _GNU_SOURCE
#include "settings.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
    const char *name, *dflt, *choices, *meaning;
} settings[CHECK_SET_COUNT] = {
#define CHECK_SETTING(id, name, dflt, choices, meaning) [CHECK_SET_##id] = {name, dflt, choices, meaning},
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

const char *check_setting_value(check_setting s)
{
    return (unsigned)s < CHECK_SET_COUNT ? check_setting_get(s, settings[s].dflt) : NULL;
}

const char *check_setting_choices(check_setting s)
{
    return (unsigned)s < CHECK_SET_COUNT ? settings[s].choices : "";
}

const char *check_setting_default(check_setting s)
{
    return (unsigned)s < CHECK_SET_COUNT ? settings[s].dflt : NULL;
}

int check_choice_index(const char *choices, const char *word)
{
    size_t len = word ? strlen(word) : 0;
    int index = 0;
    for (const char *c = choices; word && *c; index++) {
        const char *bar = strchr(c, '|');
        size_t n = bar ? (size_t)(bar - c) : strlen(c);
        if (n == len && strncmp(c, word, n) == 0)
            return index;
        if (!bar)
            break;
        c = bar + 1;
    }
    return -1;
}

int check_setting_choice(check_setting s)
{
    int i = check_choice_index(check_setting_choices(s), check_setting_value(s));
    return i >= 0 ? i : check_choice_index(check_setting_choices(s), check_setting_default(s));
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
