/* Every executable starts here. This file and core/isa_check.c are compiled
 * with baseline flags only and never LTO'd, so no instruction of the build's
 * ISA can run before the CPU has been checked (DESIGN §6). */
#include <stdio.h>
#include <string.h>

#include "app/exit_codes.h"
#if defined(_WIN32)
#include "app/win_args.h"
#endif
#include "config/ml_config.h" /* ML_ISA_NAME */
#include "core/isa_check.h"
#include "core/version.h"

int ml_main(int argc, char **argv);

/* "ml_run 0.3.0 (avx2 build)": the program's name is argv[0]'s last path
 * component, without a Windows ".exe". */
static void print_version(const char *argv0) {
    const char *name = argv0 && *argv0 ? argv0 : "legacy-ml";
    for (const char *p = name; *p; p++)
        if (*p == '/' || *p == '\\') name = p + 1;
    size_t len = strlen(name);
    if (len > 4 && (!strcmp(name + len - 4, ".exe") || !strcmp(name + len - 4, ".EXE"))) len -= 4;
    printf("%.*s %s (%s build)\n", (int)len, name, ML_VERSION, ML_ISA_NAME);
}

ML_GUARD_FN int main(int argc, char **argv) {
#if defined(_WIN32)
    ml_utf8_args(&argc, &argv); /* prompts and paths in UTF-8, as on POSIX */
#endif
    /* --version and --cpu-info [--json] answer before the check, so even a
     * build this CPU cannot run can say what it is and which build to use. */
    int info = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--version") == 0) {
            print_version(argv[0]);
            return ML_EXIT_OK;
        }
        info |= strcmp(argv[i], "--cpu-info") == 0;
        json |= strcmp(argv[i], "--json") == 0;
    }
    if (info) {
        char report[2048];
        if (json) ml_isa_report_json(report, sizeof report);
        else ml_isa_report(report, sizeof report);
        fputs(report, stdout);
        return ML_EXIT_OK;
    }
    ml_err err;
    if (ml_isa_check(&err) != ML_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return ML_EXIT_ISA;
    }
    return ml_main(argc, argv);
}
