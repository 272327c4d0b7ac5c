/* Minimal guard for the scalar build; the x86/ARM feature detection lands
 * with the SIMD builds. */
#include "core/isa_check.h"

#include <stdio.h>

#define ML_STR_(a) #a
#define ML_STR(a) ML_STR_(a)

ml_status ml_isa_check(ml_err *err) {
    (void)err;
    return ML_OK;
}

void ml_isa_report(char *buf, size_t len) {
    snprintf(buf, len, "build: %s\n", ML_STR(ML_ISA));
}
