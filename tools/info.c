/* `gpumem info`: what gpumem sees on this machine, and every option's effective value. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gpumem.h"
#include "tool.h"

static void info_usage(FILE *out)
{
    fprintf(out, "usage: gpumem info [--config]\n"
                 "\n"
                 "Prints the version, the backend in use, the devices and their memory, and every\n"
                 "GPUMEM_* option with its effective value and a line of help.\n"
                 "  --config    print only the options\n"
                 "  --help, --version\n"
                 "\n"
                 "Exit status: 0 when it printed its report, also when no CUDA device is usable\n"
                 "(\"devices: none usable\" and the reason are part of the report); 2 for a usage\n"
                 "error.\n");
}

/* The default handler would print ENODEV's message as an error; here it is information. */
static void quiet(const gpumem_error *e, void *arg)
{
    (void)e;
    (void)arg;
}

static void print_options(void)
{
    printf("options (environment variables):\n");
    for (int i = 0; i < gpumem_option_count(); i++) {
        const char *name, *value, *def, *help;
        gpumem_option_get(i, &name, &value, &def, &help);
        int is_default = strcmp(value, def) == 0;
        printf("  %-26s %s%s%s%s\n      %s\n", name, value, is_default ? "" : "   (default ",
               is_default ? "" : def, is_default ? "" : ")", help);
    }
}

int gpumem_info_main(int argc, char **argv)
{
    enum { OPT_CONFIG };
    static const cli_opt opts[] = {{"--config", 0, CLI_FLAG, OPT_CONFIG}};
    static const cli_cmd cmd = {"info", opts, CLI_COUNT(opts), info_usage, CLI_NO_OPERANDS};
    int config_only = 0;
    cli c;
    cli_start(&c, &cmd, argc, argv);
    for (int id; (id = cli_next(&c)) != CLI_DONE;) {
        if (id == CLI_EXIT)
            return c.status;
        config_only = 1; /* OPT_CONFIG */
    }
    gpumem_set_error_handler(quiet, NULL);
    int status = gpumem_init();
    if (config_only) {
        print_options();
        return 0;
    }
    printf("gpumem %s\n", gpumem_version());
    printf("backend: %s%s\n", gpumem_backend(),
           strcmp(gpumem_backend(), "sim") == 0 ? " (simulated device: memory in host RAM)" : "");
    if (status != GPUMEM_OK) {
        const char *msg = gpumem_last_error()->message;
        const char *nl = strchr(msg, '\n');
        const char *why = nl ? nl + 1 : msg;
        while (*why == ' ')
            why++;
        printf("devices: none usable\n  %s\n", why);
        if (strcmp(gpumem_backend(), "sim") != 0)
            printf("  without a GPU: gpumem lint works, and the library and its tests run on the "
                   "simulated device (GPUMEM_BACKEND=sim)\n");
    } else {
        int n = gpumem_device_count();
        printf("devices: %d\n", n);
        for (int d = 0; d < n; d++) {
            gpumem_device_info di;
            char total[32], free_text[32];
            if (gpumem_device_get(d, &di) != GPUMEM_OK) {
                printf("  %d: %s\n", d, gpumem_last_error()->message);
                continue;
            }
            printf("  %d: %s, compute capability %d.%d, %s total, %s free\n", d, di.name,
                   di.cc_major, di.cc_minor,
                   gpumem_format_bytes(di.total_bytes, total, sizeof total),
                   gpumem_format_bytes(di.free_bytes, free_text, sizeof free_text));
        }
    }
    print_options();
    return 0; /* the report is whole either way: saying there is no device is its job */
}
