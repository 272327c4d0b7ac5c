#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *ml_status_name(ml_status s) {
    static const char *const names[ML_STATUS_COUNT] = {
        "ML_OK", "ML_E_IO", "ML_E_FORMAT", "ML_E_SHAPE", "ML_E_NOMEM", "ML_E_ISA", "ML_E_ARG",
    };
    return (s >= 0 && s < ML_STATUS_COUNT) ? names[s] : "ML_E_UNKNOWN";
}

ml_status ml_errf(ml_err *e, ml_status s, const char *fmt, ...) {
    if (e) {
        /* Formatted apart first: callers prefix a message with e->msg itself
         * as an argument, and vsnprintf's source and target must not overlap. */
        char msg[sizeof e->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        memcpy(e->msg, msg, sizeof msg);
    }
    return s;
}
