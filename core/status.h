/* Status codes returned by every library function, and the error record that
 * carries a human-readable reason up to app/ (the only layer that prints). */
#ifndef ML_STATUS_H
#define ML_STATUS_H

#include <stddef.h>

typedef enum {
    ML_OK = 0,
    ML_E_IO,      /* file missing, unreadable, short read, mmap failure */
    ML_E_FORMAT,  /* bad magic, version, field value or file layout */
    ML_E_SHAPE,   /* dimensions that break a kernel or format constraint */
    ML_E_NOMEM,   /* arena or buffer allocation failed */
    ML_E_ISA,     /* this CPU/OS lacks the instruction set the build needs */
    ML_E_ARG,     /* caller passed an invalid value (prompt too long, ...) */
    ML_STATUS_COUNT
} ml_status;

/* Why the last call failed: "field: expected X, got Y". Optional (may be NULL). */
typedef struct { char msg[512]; } ml_err;

/* Stable short name of a status code, e.g. "ML_E_FORMAT". */
const char *ml_status_name(ml_status s);

/* printf-style format checking of argument f against the arguments from a.
 * mingw builds use its C99 printf (__USE_MINGW_ANSI_STDIO, for %zu and %lld),
 * which gcc calls gnu_printf there (plain printf would mean msvcrt's); clang
 * knows no gnu_printf and checks printf as C99. */
#if defined(__MINGW32__) && !defined(__clang__)
#define ML_PRINTF(f, a) __attribute__((format(gnu_printf, f, a)))
#elif defined(__GNUC__)
#define ML_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ML_PRINTF(f, a)
#endif

/* Record a formatted reason in e (if non-NULL) and return s. */
ml_status ml_errf(ml_err *e, ml_status s, const char *fmt, ...) ML_PRINTF(3, 4);

#endif
