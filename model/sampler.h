/* Next-token choice: greedy (temperature 0), temperature sampling, or top-p
 * (nucleus) sampling, driven by a seeded xorshift RNG so a seed reproduces a
 * run on every build. */
#ifndef ML_SAMPLER_H
#define ML_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int vocab;
    float temperature; /* 0: greedy */
    float topp;        /* in (0, 1): nucleus sampling; otherwise plain sampling */
    uint64_t rng;      /* xorshift64* state, never 0 */
    void *scratch;     /* (vocab) candidates, ml_sampler_scratch_bytes(vocab) bytes */
} ml_sampler;

size_t ml_sampler_scratch_bytes(int vocab);

/* scratch: a buffer of ml_sampler_scratch_bytes(vocab) bytes (from the arena). */
void ml_sampler_init(ml_sampler *s, int vocab, float temperature, float topp, uint64_t seed,
                     void *scratch);

/* Pick the next token; logits are overwritten (scaled, softmaxed). */
int ml_sample(ml_sampler *s, float *logits);

/* Index of the largest value (the first one on ties). */
int ml_argmax(const float *x, int n);

#endif
