/* Run-time tuning of the kernels: choices of how weights stream from
 * memory, never of what is computed, so every setting gives the same bits.
 * The start-up guard sets them from the CPU (ml_isa_check); a setting made
 * by hand (ml_bench --prefetch, the tests) wins over the guard's. */
#ifndef ML_TUNE_H
#define ML_TUNE_H

/* The avx512vnni matvec's Zen 5 streaming: prefetch 16 rows ahead into L1
 * (else 8 or 16 into L2) and read Q8_0 in row runs (else in steps across
 * the 16 rows); docs/PERF.md "AMD Zen 5, row runs". Measured together on
 * Zen 5 (TinyLlama decode 1.14-1.27x Q8_0, 1.09-1.19x Q4_0); the Intel
 * Xeon host measured the L2 prefetch 7-16% faster than L1, and nothing
 * else has been measured, so only AMD family 26 (Zen 5) on gets it. */
void ml_set_prefetch_l1(int on);      /* by hand */
void ml_tune_prefetch_l1(int on);     /* the guard's choice: unless set by hand */
int ml_prefetch_l1(void);

#endif
