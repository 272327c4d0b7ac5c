/* Next-token choice: greedy (temperature 0), temperature sampling, and the
 * filters top-k, min-p and top-p (nucleus), after an optional repetition
 * penalty; driven by a seeded xorshift RNG so a seed reproduces a run on
 * every build. All of it is scalar float code in a fixed order (no kernel
 * but ml_op_softmax), so every build picks the same tokens. */
#ifndef ML_SAMPLER_H
#define ML_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "core/argmax.h" /* ml_argmax: the pick at temperature 0 */
#include "core/status.h"

typedef struct {
    int vocab;
    float temperature; /* 0: greedy */
    float topp;        /* in (0, 1): nucleus sampling; otherwise plain sampling */
    int top_k;         /* > 0: keep the k most likely tokens; 0: off */
    float min_p;       /* > 0: keep tokens with p >= min_p * max p; 0: off */
    float penalty;     /* repetition penalty; 1: off */
    int last_n;        /* the penalty's window: the last last_n tokens (0: off) */
    uint64_t rng;      /* xorshift64* state, never 0 */
    void *scratch;     /* (vocab) candidates, then (context) the token history */
    int *hist;         /* (last_n) ring of the last tokens accepted */
    long n_hist;       /* tokens accepted so far */
} ml_sampler;

/* The scratch for a model of this vocab and context (the loader carves it
 * from the arena, so sampling never allocates). */
size_t ml_sampler_scratch_bytes(int vocab, int context);

/* scratch: a buffer of ml_sampler_scratch_bytes(vocab, context) bytes (from
 * the arena). The filters start off: call ml_sampler_set_filters after. */
void ml_sampler_init(ml_sampler *s, int vocab, float temperature, float topp, uint64_t seed,
                     void *scratch);

/* top_k >= 0 (0: off); min_p in [0, 1] (0: off); penalty > 0 (1: off) over
 * the last `last_n` tokens accepted (0: off; -1: the whole context);
 * context: the one the scratch was sized for. Bad values: ML_E_ARG. */
ml_status ml_sampler_set_filters(ml_sampler *s, int top_k, float min_p, float penalty, int last_n,
                                 int context, ml_err *err);

/* Record a token of the text (prompt or sampled) for the repetition penalty. */
void ml_sampler_accept(ml_sampler *s, int token);

/* Pick the next token; logits are overwritten (penalized, scaled, softmaxed).
 * Order: repetition penalty (llama.cpp's rule: a positive logit divided by
 * the penalty, a negative one multiplied, once per distinct token of the
 * window); greedy stops here; then softmax at the temperature, top-k,
 * min-p (relative to the most likely token), top-p over what is left
 * (renormalized), and one draw. */
int ml_sample(ml_sampler *s, float *logits);

#endif
