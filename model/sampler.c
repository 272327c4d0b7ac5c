#include "model/sampler.h"

#include <float.h>

#include "ops/ops.h"

typedef struct {
    float p;
    int i;
} candidate;

size_t ml_sampler_scratch_bytes(int vocab, int context) {
    return (size_t)vocab * sizeof(candidate) + (size_t)context * sizeof(int);
}

void ml_sampler_init(ml_sampler *s, int vocab, float temperature, float topp, uint64_t seed,
                     void *scratch) {
    s->vocab = vocab;
    s->temperature = temperature;
    s->topp = topp;
    s->rng = seed ? seed : 0x9E3779B97F4A7C15ull; /* xorshift has no zero state */
    s->scratch = scratch;
    s->top_k = 0;
    s->min_p = 0.0f;
    s->penalty = 1.0f;
    s->last_n = 0;
    s->hist = (int *)(void *)((candidate *)scratch + vocab);
    s->n_hist = 0;
}

ml_status ml_sampler_set_filters(ml_sampler *s, int top_k, float min_p, float penalty, int last_n,
                                 int context, ml_err *err) {
    if (top_k < 0) return ml_errf(err, ML_E_ARG, "top-k: expected an integer >= 0 (0 = off), got %d", top_k);
    if (!(min_p >= 0.0f && min_p <= 1.0f))
        return ml_errf(err, ML_E_ARG, "min-p: expected a number in [0, 1] (0 = off), got %g", (double)min_p);
    if (!(penalty > 0.0f) || penalty > 1e30f)
        return ml_errf(err, ML_E_ARG, "repeat penalty: expected a number > 0 (1 = off), got %g", (double)penalty);
    if (last_n < -1)
        return ml_errf(err, ML_E_ARG, "repeat-last-n: expected an integer >= -1 (0 = off, -1 = the context), got %d",
                       last_n);
    s->top_k = top_k;
    s->min_p = min_p;
    s->penalty = penalty;
    s->last_n = last_n < 0 || last_n > context ? context : last_n; /* the window never holds more */
    s->n_hist = 0;
    return ML_OK;
}

void ml_sampler_accept(ml_sampler *s, int token) {
    /* an id outside the vocabulary is no token to penalize (the window indexes logits by it) */
    if (s->last_n <= 0 || s->penalty == 1.0f || token < 0 || token >= s->vocab) return;
    s->hist[s->n_hist % s->last_n] = token;
    s->n_hist++;
}

/* xorshift64*: 24 random bits -> a float in [0, 1). */
static float random_f32(uint64_t *state) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    uint32_t r = (uint32_t)((*state * 0x2545F4914F6CDD1Dull) >> 32);
    return (float)(r >> 8) / 16777216.0f;
}

/* Sample index i with probability p[i] (p sums to 1); coin in [0, 1). */
static int sample_mult(const float *p, int n, float coin) {
    float cdf = 0.0f;
    for (int i = 0; i < n; i++) {
        cdf += p[i];
        if (coin < cdf) return i;
    }
    return n - 1; /* rounding left the cdf just below 1 */
}

/* Max-heap on p, in place: lets top-p take candidates in descending order
 * and stop as soon as the nucleus is complete, without allocating. */
static void sift_down(candidate *h, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, top = i;
        if (l < n && h[l].p > h[top].p) top = l;
        if (r < n && h[r].p > h[top].p) top = r;
        if (top == i) return;
        candidate t = h[i];
        h[i] = h[top];
        h[top] = t;
        i = top;
    }
}

/* Move the heap's largest (of c[0..heap-1]) to c[heap-1]; returns it. */
static candidate pop_max(candidate *c, int heap) {
    candidate top = c[0];
    c[0] = c[heap - 1];
    c[heap - 1] = top;
    sift_down(c, heap - 1, 0);
    return top;
}

/* Draw among the `taken` largest, c[m-1], c[m-2], ... (descending), whose
 * probabilities sum to mass; coin in [0, 1). */
static int draw_tail(const candidate *c, int m, int taken, float mass, float coin) {
    float r = coin * mass, cdf = 0.0f;
    for (int k = 0; k < taken; k++) {
        cdf += c[m - 1 - k].p;
        if (r < cdf) return c[m - 1 - k].i;
    }
    return c[m - taken].i;
}

/* Nucleus sampling: the smallest set of most likely tokens whose
 * probability reaches topp, renormalized. Tokens below (1-topp)/(n-1) can
 * never be in the nucleus, so they are dropped before the heap is built. */
static int sample_topp(const float *p, int n, float topp, candidate *c, float coin) {
    float cutoff = (1.0f - topp) / (float)(n > 1 ? n - 1 : 1);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (p[i] >= cutoff) c[m++] = (candidate){p[i], i};
    if (m == 0) return ml_argmax(p, n);
    for (int i = m / 2 - 1; i >= 0; i--) sift_down(c, m, i);
    /* Pop the largest to the tail until the nucleus mass reaches topp. */
    float mass = 0.0f;
    int taken = 0, heap = m;
    while (heap > 0) {
        mass += pop_max(c, heap--).p;
        taken++;
        if (mass > topp) break;
    }
    /* The nucleus sits at c[m-1], c[m-2], ... in descending order. */
    return draw_tail(c, m, taken, mass, coin);
}

/* ---- repetition penalty ---------------------------------------------------- */

/* llama.cpp's rule on each distinct token of the window: a positive logit
 * is divided by the penalty, a negative one multiplied, so a penalty > 1
 * always makes the token less likely. The candidates' p fields serve as
 * "seen" marks, so a token repeated in the window is penalized once. */
static void apply_penalty(ml_sampler *s, float *logits) {
    candidate *seen = s->scratch;
    long n = s->n_hist < s->last_n ? s->n_hist : s->last_n;
    for (long k = 0; k < n; k++) seen[s->hist[k]].p = 0.0f;
    for (long k = 0; k < n; k++) {
        int t = s->hist[k];
        if (seen[t].p != 0.0f) continue;
        seen[t].p = 1.0f;
        if (logits[t] > 0.0f) logits[t] /= s->penalty;
        else logits[t] *= s->penalty;
    }
}

/* ---- top-k and min-p --------------------------------------------------------- */

/* The tokens that pass min-p (p >= min_p * max p), at most top_k of them
 * taken largest first (a heap, in place); then top-p over those, its mass
 * relative to theirs; then a draw among what is left. */
static int sample_filtered(const ml_sampler *s, const float *p, float coin) {
    candidate *c = s->scratch;
    int n = s->vocab;
    float pmax = p[ml_argmax(p, n)];
    float cut = s->min_p * pmax;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (p[i] >= cut) c[m++] = (candidate){p[i], i};
    for (int i = m / 2 - 1; i >= 0; i--) sift_down(c, m, i);
    int k = s->top_k > 0 && s->top_k < m ? s->top_k : m;
    float kept = 0.0f;
    for (int j = 0; j < k; j++) kept += pop_max(c, m - j).p; /* the k largest, descending from c[m-1] */
    int taken = k;
    float mass = kept;
    if (s->topp > 0.0f && s->topp < 1.0f) {
        mass = 0.0f;
        for (taken = 0; taken < k;) {
            mass += c[m - 1 - taken].p;
            taken++;
            if (mass > s->topp * kept) break;
        }
    }
    return draw_tail(c, m, taken, mass, coin);
}

/* ---- the choice ---------------------------------------------------------- */

int ml_sample(ml_sampler *s, float *logits) {
    if (s->last_n > 0 && s->penalty != 1.0f && s->n_hist > 0) apply_penalty(s, logits);
    if (s->temperature == 0.0f) return ml_argmax(logits, s->vocab);
    /* A tiny temperature (or repeat penalty) can overflow the largest
     * logit to +-inf, and the softmax would be NaN: the draw's limit is
     * then the greedy choice, the first of the largest. */
    const int top = ml_argmax(logits, s->vocab);
    for (int i = 0; i < s->vocab; i++) logits[i] /= s->temperature;
    float coin = random_f32(&s->rng);
    if (!(logits[top] >= -FLT_MAX && logits[top] <= FLT_MAX)) return top;
    ml_op_softmax(logits, s->vocab);
    if (s->top_k > 0 || s->min_p > 0.0f) return sample_filtered(s, logits, coin);
    if (s->topp <= 0.0f || s->topp >= 1.0f) return sample_mult(logits, s->vocab, coin);
    return sample_topp(logits, s->vocab, s->topp, s->scratch, coin);
}
