/* Strict parsing of command-line numbers: the whole string must be a
 * number in range, or the caller prints usage and exits. */
#ifndef ML_CLI_H
#define ML_CLI_H

/* 1 on success. */
int ml_cli_int(const char *s, long lo, long hi, long *out);
int ml_cli_float(const char *s, double lo, double hi, double *out);
int ml_cli_u64(const char *s, unsigned long long *out);

/* Seconds on a monotonic clock. */
double ml_cli_now(void);

#endif
