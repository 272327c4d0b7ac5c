#include "model/sampler.h"

#include "ops/ops.h"

typedef struct {
    float p;
    int i;
} candidate;

size_t ml_sampler_scratch_bytes(int vocab) { return (size_t)vocab * sizeof(candidate); }

void ml_sampler_init(ml_sampler *s, int vocab, float temperature, float topp, uint64_t seed,
                     void *scratch) {
    s->vocab = vocab;
    s->temperature = temperature;
    s->topp = topp;
    s->rng = seed ? seed : 0x9E3779B97F4A7C15ull; /* xorshift has no zero state */
    s->scratch = scratch;
}

/* xorshift64*: 24 random bits -> a float in [0, 1). */
static float random_f32(uint64_t *state) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    uint32_t r = (uint32_t)((*state * 0x2545F4914F6CDD1Dull) >> 32);
    return (float)(r >> 8) / 16777216.0f;
}

int ml_argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
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
        candidate top = c[0];
        c[0] = c[--heap];
        c[heap] = top;
        sift_down(c, heap, 0);
        mass += top.p;
        taken++;
        if (mass > topp) break;
    }
    /* The nucleus sits at c[m-1], c[m-2], ... in descending order. */
    float r = coin * mass, cdf = 0.0f;
    for (int k = 0; k < taken; k++) {
        cdf += c[m - 1 - k].p;
        if (r < cdf) return c[m - 1 - k].i;
    }
    return c[m - taken].i;
}

int ml_sample(ml_sampler *s, float *logits) {
    if (s->temperature == 0.0f) return ml_argmax(logits, s->vocab);
    for (int i = 0; i < s->vocab; i++) logits[i] /= s->temperature;
    ml_op_softmax(logits, s->vocab);
    float coin = random_f32(&s->rng);
    if (s->topp <= 0.0f || s->topp >= 1.0f) return sample_mult(logits, s->vocab, coin);
    return sample_topp(logits, s->vocab, s->topp, s->scratch, coin);
}
