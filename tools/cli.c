/* The command-line grammar of every `gpumem` subcommand (cli.h). */
#define _GNU_SOURCE
#include "cli.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gpumem.h"
#include "internal.h"

void cli_start(cli *c, const cli_cmd *cmd, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    c->cmd = cmd;
    c->argc = argc;
    c->argv = argv;
    c->next = 1; /* argv[0] is the subcommand's name */
}

int cli_usage_error(const cli *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpumem %s: error: ", c->cmd->name);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(`gpumem %s --help` lists the options)\n", c->cmd->name);
    return CLI_EXIT_USAGE;
}

const char *cli_suggest(const char *name, size_t len, const char *const *candidates, size_t count)
{
    /* One edit in a short word, up to three in a long one: "chek", "--leak-chek". */
    size_t max = len < 6 ? 1 : len < 10 ? 2 : 3;
    return gpumem__suggest(name, len, candidates, count, max);
}

static int table_has(const cli *c, const char *name)
{
    for (size_t i = 0; i < c->cmd->count; i++)
        if (strcmp(c->cmd->opts[i].name, name) == 0)
            return 1;
    return 0;
}

static int fail(cli *c, int status)
{
    c->status = status;
    return CLI_EXIT;
}

static int unknown_option(cli *c, const char *arg, size_t len)
{
    const char *names[64];
    size_t n = 0;
    for (size_t i = 0; i < c->cmd->count && n < 62; i++)
        names[n++] = c->cmd->opts[i].name;
    names[n++] = "--help";
    names[n++] = "--version";
    const char *best = cli_suggest(arg, len, names, n);
    if (best)
        return fail(c, cli_usage_error(c, "unknown option '%.*s'; did you mean %s?", (int)len, arg,
                                       best));
    return fail(c, cli_usage_error(c, "unknown option '%.*s'", (int)len, arg));
}

static int operand(cli *c, const char *a)
{
    if (c->cmd->operands == CLI_STOP_OPERAND)
        return CLI_DONE;
    if (c->cmd->operands == CLI_OPERANDS) {
        c->value = a;
        c->next++;
        return CLI_OPERAND;
    }
    return fail(c, cli_usage_error(c, "unexpected argument '%s' (gpumem %s takes options only)", a,
                                   c->cmd->name));
}

int cli_next(cli *c)
{
    c->value = NULL;
    c->opt = NULL;
    if (c->next >= c->argc)
        return CLI_DONE;
    const char *a = c->argv[c->next];
    if (c->only_operands || a[0] != '-' || a[1] == '\0')
        return operand(c, a);
    if (strcmp(a, "--") == 0) {
        c->next++;
        if (c->cmd->operands == CLI_STOP_OPERAND)
            return CLI_DONE;
        if (c->cmd->operands == CLI_OPERANDS) {
            c->after_dashes = 1;
            return CLI_DONE;
        }
        c->only_operands = 1;
        return cli_next(c);
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
        c->cmd->usage(stdout);
        return fail(c, 0);
    }
    if (strcmp(a, "--version") == 0 && !table_has(c, "--version")) {
        printf("gpumem %s %s\n", c->cmd->name, gpumem_version());
        return fail(c, 0);
    }
    const cli_opt *o = NULL;
    const char *inline_value = NULL;
    size_t len;
    if (a[1] == '-') {
        const char *eq = strchr(a, '=');
        len = eq ? (size_t)(eq - a) : strlen(a);
        inline_value = eq ? eq + 1 : NULL;
        for (size_t i = 0; i < c->cmd->count && !o; i++)
            if (strlen(c->cmd->opts[i].name) == len && strncmp(c->cmd->opts[i].name, a, len) == 0)
                o = &c->cmd->opts[i];
    } else {
        /* -q, -j 4, or -j4: a short name takes the rest of its word as its value. */
        len = 2;
        for (size_t i = 0; i < c->cmd->count && !o; i++)
            if (c->cmd->opts[i].short_name && c->cmd->opts[i].short_name == a[1])
                o = &c->cmd->opts[i];
        if (o && a[2] != '\0') {
            if (o->arg == CLI_FLAG)
                o = NULL;
            else
                inline_value = a + 2 + (a[2] == '='); /* -j=4 too */
        }
        if (!o)
            len = strlen(a);
    }
    if (!o)
        return unknown_option(c, a, len);
    c->opt = o->name;
    c->next++;
    if (o->arg == CLI_FLAG) {
        if (inline_value)
            return fail(c, cli_usage_error(c, "%s takes no value (not '%s')", o->name,
                                           inline_value));
        return o->id;
    }
    if (inline_value) {
        c->value = inline_value;
    } else if (c->next < c->argc) {
        c->value = c->argv[c->next++];
    } else {
        return fail(c, cli_usage_error(c, "%s needs a value (%s VALUE or %s=VALUE)", o->name,
                                       o->name, o->name));
    }
    return o->id;
}

int cli_have_driver(const char *cmd, const char *need)
{
    const char *path = getenv("GPUMEM_LIBCUDA");
    if (!path || !*path)
        path = "libcuda.so.1";
    void *lib = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (lib) {
        dlclose(lib);
        return 1;
    }
    fprintf(stderr, "gpumem %s: error: no NVIDIA driver here (%s not found); %s\n", cmd, path,
            need);
    cli_say_without_gpu();
    return 0;
}

void cli_say_without_gpu(void)
{
    fprintf(stderr, "  without a GPU: gpumem lint works, and the library runs on its simulated "
                    "device (GPUMEM_BACKEND=sim)\n");
}
