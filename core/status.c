#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>

const char *ml_status_name(ml_status s) {
    static const char *const names[ML_STATUS_COUNT] = {
        "ML_OK", "ML_E_IO", "ML_E_FORMAT", "ML_E_SHAPE", "ML_E_NOMEM", "ML_E_ISA", "ML_E_ARG",
    };
    return (s >= 0 && s < ML_STATUS_COUNT) ? names[s] : "ML_E_UNKNOWN";
}

ml_status ml_errf(ml_err *e, ml_status s, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return s;
}
