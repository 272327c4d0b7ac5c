/* Run-time tuning of the kernels: choices of where data goes, never of what
 * is computed, so every setting gives the same bits. The start-up guard
 * sets them from the CPU (ml_isa_check); ml_bench --prefetch by hand. */
#ifndef ML_TUNE_H
#define ML_TUNE_H

/* Whether the matvecs prefetch weights into L1 rather than L2. Measured
 * per vendor: into L1 on AMD Zen 5 (TinyLlama decode 1.09-1.19x at 1
 * thread), into L2 on the Intel Xeon host (7-16% faster than L1 there). */
void ml_set_prefetch_l1(int on);
int ml_prefetch_l1(void);

#endif
