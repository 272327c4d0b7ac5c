/* The greedy pick, shared by the sampler (model/) and the programs that
 * score logits without one (app/ml_perplexity.c). */
#ifndef ML_CORE_ARGMAX_H
#define ML_CORE_ARGMAX_H

/* Index of the largest value (the first one on ties; a NaN is never
 * larger, so x[0] = NaN gives 0, as one `if (x[i] > x[best])` pass does).
 * Two passes: the largest value, in 8 running maxima that compile to
 * vector max instructions (the one-pass loop waits on its own compare and
 * reload each element: 0.1 ms per 32000-token vocabulary, 17% of a
 * stories15M speculative run), then the first index holding it. */
static inline int ml_argmax(const float *x, int n) {
    if (n < 1 || x[0] != x[0]) return 0;
    float m[8];
    for (int j = 0; j < 8; j++) m[j] = x[0];
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
    for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];
    float best = m[0];
    for (int j = 1; j < 8; j++) best = m[j] > best ? m[j] : best;
    for (i = 0; x[i] != best; i++) {}
    return i;
}

#endif
