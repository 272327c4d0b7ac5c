/* Every executable starts here. This file and core/isa_check.c are compiled
 * with baseline flags only and never LTO'd, so no instruction of the build's
 * ISA can run before the CPU has been checked (DESIGN §6). */
#include <stdio.h>

#include "app/exit_codes.h"
#include "core/isa_check.h"

int ml_main(int argc, char **argv);

int main(int argc, char **argv) {
    ml_err err;
    if (ml_isa_check(&err) != ML_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return ML_EXIT_ISA;
    }
    return ml_main(argc, argv);
}
