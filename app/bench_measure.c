/* How ml_bench measures: repeated timing and medians. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef _WIN32
#include <io.h>
#define ml_isatty_stderr() _isatty(_fileno(stderr))
#else
#include <unistd.h>
#define ml_isatty_stderr() isatty(fileno(stderr))
#endif

#include "app/bench.h"
#include "app/cli.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

ml_bench_stats ml_bench_summarize(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    ml_bench_stats s = {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v[0], v[n - 1]};
    return s;
}

void ml_bench_progress(const char *fmt, ...) {
    static int tty = -1;
    if (tty < 0) tty = ml_isatty_stderr() ? 1 : 0;
    if (!tty) return;
    fputs("\r\033[K", stderr);
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs("ml_bench: measuring ", stderr);
        vfprintf(stderr, fmt, ap);
        fputs(" ...", stderr);
        va_end(ap);
    }
    fflush(stderr);
}

double ml_bench_time_call(void (*fn)(void *ctx), void *ctx) {
    int calls = 1;
    for (;;) {
        double t0 = ml_cli_now();
        for (int i = 0; i < calls; i++) fn(ctx);
        double dt = ml_cli_now() - t0;
        if (dt > 0.05 || calls > (1 << 24)) return dt / calls;
        calls *= dt > 0.005 ? 4 : 16;
    }
}
