/* The library's entry points that may run on a CPU the build's ISA does not
 * suit: the version, the CPU check, and the model opens, which check first.
 * Compiled like app/main_guard.c (no ISA flags, never LTO'd), so nothing
 * built for the ISA runs before the check (DESIGN §6). */
#include <string.h>

#include "api/api.h"
#include "config/ml_config.h" /* ML_ISA_NAME */
#include "core/isa_check.h"
#include "core/version.h"

ML_GUARD_FN const char *lml_version(void) { return ML_VERSION; }

ML_GUARD_FN const char *lml_build_isa(void) { return ML_ISA_NAME; }

ML_GUARD_FN lml_status lml_cpu_check(lml_error *err) {
    ml_err e;
    e.msg[0] = 0;
    ml_status s = ml_isa_check(&e);
    if (err) {
        memcpy(err->message, e.msg, sizeof err->message);
        err->message[sizeof err->message - 1] = 0;
    }
    return (lml_status)s;
}

ML_GUARD_FN lml_status lml_model_open(lml_model **out, const char *path, const lml_model_options *opts,
                                      lml_error *err) {
    if (out) *out = NULL;
    lml_status s = lml_cpu_check(err);
    return s ? s : ml_api_open(out, path, NULL, 0, opts, err);
}

ML_GUARD_FN lml_status lml_model_open_memory(lml_model **out, const void *data, size_t size,
                                             const lml_model_options *opts, lml_error *err) {
    if (out) *out = NULL;
    lml_status s = lml_cpu_check(err);
    return s ? s : ml_api_open(out, NULL, data, size, opts, err);
}
