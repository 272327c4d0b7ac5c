/* Every executable starts here. This file and core/isa_check.c are compiled
 * with baseline flags only and never LTO'd, so no instruction of the build's
 * ISA can run before the CPU has been checked (DESIGN §6). */
#include <stdio.h>
#include <string.h>

#include "app/exit_codes.h"
#if defined(_WIN32)
#include "app/win_args.h"
#endif
#include "core/isa_check.h"

int ml_main(int argc, char **argv);

ML_GUARD_FN int main(int argc, char **argv) {
#if defined(_WIN32)
    ml_utf8_args(&argc, &argv); /* prompts and paths in UTF-8, as on POSIX */
#endif
    /* --cpu-info [--json] answers before the check, so even a build this CPU
     * cannot run can say which build to use instead. */
    int info = 0, json = 0;
    for (int i = 1; i < argc; i++) {
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
