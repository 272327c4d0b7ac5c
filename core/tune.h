/* Run-time tuning of the kernels: choices of how weights stream from
 * memory, never of what is computed, so every setting gives the same bits.
 * The start-up guard sets them from the CPU (ml_isa_check); a setting made
 * by hand (ml_bench --prefetch, the tests) wins over the guard's. */
#ifndef ML_TUNE_H
#define ML_TUNE_H

/* How the avx512vnni matvec streams its weights, each the fastest measured
 * on its CPU (docs/PERF.md):
 *  - ML_STREAM_L2: prefetch 8 or 16 rows ahead into L2, Q8_0 read in steps
 *    across 16 rows; the Intel Xeon host measured it 7-16% faster than
 *    into L1. The default: any CPU not named below.
 *  - ML_STREAM_L1: the Zen 5 streaming, AMD family 26 on: 16 rows ahead
 *    into L1 and Q8_0 in row runs (TinyLlama decode 1.14-1.27x Q8_0,
 *    1.09-1.19x Q4_0); "AMD Zen 5, row runs".
 *  - ML_STREAM_HW: for 1 or 2 tokens of a packed matrix (the weights read
 *    into memory), Q8_0 with no software prefetch, the hardware
 *    prefetchers alone; Q4_0 into L1; a mapped file's matrices and batches
 *    of 3 or more into L2
 *    (kernels/avx512vnni/matvec_body.h, ml_avx512_stream). AMD family 25
 *    (Zen 4; Zen 3, the rest of the family, has no AVX-512), where
 *    prefetches into L2 slowed TinyLlama's Q8_0 decode 1.3x, into L1 1.1x;
 *    "AMD Zen 4, the hardware prefetchers".
 * A value other than these three is taken as ML_STREAM_L2. */
enum { ML_STREAM_L2, ML_STREAM_L1, ML_STREAM_HW };

void ml_set_stream(int mode);  /* by hand */
void ml_tune_stream(int mode); /* the guard's choice: unless set by hand */
int ml_stream(void);

#endif
