/* Start-up guard: does this CPU (and OS) support the ISA this binary was
 * built for? Compiled without ISA flags so it runs on any CPU of the
 * architecture (DESIGN §6). */
#ifndef ML_ISA_CHECK_H
#define ML_ISA_CHECK_H

#include "core/status.h"

/* ML_OK, or ML_E_ISA with err naming the build, every missing feature and
 * the best build this CPU can run. */
ml_status ml_isa_check(ml_err *err);

/* A human-readable report of what the CPU and OS support and which build to
 * use, written into buf (for `ml_run --cpu-info`). */
void ml_isa_report(char *buf, size_t len);

#endif
