/* The greedy pick, shared by the sampler (model/) and the programs that
 * score logits without one (app/ml_perplexity.c). */
#ifndef ML_CORE_ARGMAX_H
#define ML_CORE_ARGMAX_H

/* Index of the largest value (the first one on ties). */
static inline int ml_argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

#endif
