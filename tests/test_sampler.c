/* The sampler's filters (model/sampler.c) against plain reference math:
 * the repetition penalty (llama.cpp's rule, once per distinct token of the
 * window, the window the last N tokens), and top-k, min-p and top-p as a
 * sort, a cut and a cumulative walk; the pick must be the reference's exact
 * token for the same coin. The defaults must pick what the sampler picked
 * before the filters existed, and bad values are refused with a message.
 *
 * The reference works on the probabilities ml_sample leaves in its logits
 * buffer (its softmax is ml_op_softmax, tested in test_ops), with distinct
 * values so the order of the candidates is the sorted one. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/sampler.h"
#include "tests/testlib.h"

#define V 300   /* vocab */
#define CTX 256 /* context */

static union {
    double align;
    unsigned char b[V * 8 + CTX * 4];
} scratch;

/* The sampler's documented RNG (xorshift64*, 24 bits -> [0, 1)). */
static float ref_coin(uint64_t *state) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    uint32_t r = (uint32_t)((*state * 0x2545F4914F6CDD1Dull) >> 32);
    return (float)(r >> 8) / 16777216.0f;
}

/* Distinct logits in [-4, 4): a permutation of a grid, from the seed. */
static void make_logits(float *x, unsigned seed) {
    for (int i = 0; i < V; i++) x[i] = -4.0f + 8.0f * (float)i / V;
    srand(seed);
    for (int i = V - 1; i > 0; i--) {
        int j = rand() % (i + 1);
        float t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
}

typedef struct {
    float p;
    int i;
} cand;

static int by_p_desc(const void *a, const void *b) {
    float x = ((const cand *)a)->p, y = ((const cand *)b)->p;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Reference top-k / min-p / top-p draw over probabilities p with coin. */
static int ref_pick(const float *p, int top_k, float min_p, float topp, float coin) {
    static cand c[V];
    for (int i = 0; i < V; i++) c[i] = (cand){p[i], i};
    qsort(c, V, sizeof *c, by_p_desc);
    int m = 0;
    while (m < V && c[m].p >= min_p * c[0].p) m++;
    if (top_k > 0 && top_k < m) m = top_k;
    float kept = 0.0f;
    for (int j = 0; j < m; j++) kept += c[j].p;
    int taken = m;
    float mass = kept;
    if (topp > 0.0f && topp < 1.0f) {
        mass = 0.0f;
        for (taken = 0; taken < m;) {
            mass += c[taken++].p;
            if (mass > topp * kept) break;
        }
    }
    float r = coin * mass, cdf = 0.0f;
    for (int j = 0; j < taken; j++) {
        cdf += c[j].p;
        if (r < cdf) return c[j].i;
    }
    return c[taken - 1].i;
}

static void test_filters(void) {
    int before = tl_failed;
    static const struct {
        int k;
        float min_p, topp, temp;
    } cases[] = {{1, 0, 0, 1}, {5, 0, 0, 1}, {40, 0, 0.9f, 1}, {0, 0.05f, 0, 1}, {0, 0.5f, 0.9f, 0.7f},
                 {10, 0.1f, 0.5f, 1.5f}, {V, 0, 0, 1}, {V + 7, 0.0f, 0.95f, 1}, {0, 1.0f, 0, 1}, {3, 1e-6f, 0.2f, 2}};
    ml_err err;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        int mismatches = 0;
        for (unsigned seed = 1; seed <= 50; seed++) {
            ml_sampler s;
            float x[V];
            make_logits(x, seed * 31u + (unsigned)ci);
            ml_sampler_init(&s, V, cases[ci].temp, cases[ci].topp, seed, scratch.b);
            CHECK(ml_sampler_set_filters(&s, cases[ci].k, cases[ci].min_p, 1.0f, 64, CTX, &err) == ML_OK,
                  "set_filters: %s", err.msg);
            uint64_t rng = seed;
            int got = ml_sample(&s, x); /* x now holds the probabilities it drew from */
            int want = ref_pick(x, cases[ci].k, cases[ci].min_p, cases[ci].topp, ref_coin(&rng));
            mismatches += got != want;
        }
        CHECK(mismatches == 0, "top-k %d, min-p %g, top-p %g, temp %g: %d of 50 picks differ from the reference",
              cases[ci].k, (double)cases[ci].min_p, (double)cases[ci].topp, (double)cases[ci].temp, mismatches);
    }
    /* top-k 1 and min-p 1 are greedy whatever the coin. */
    for (unsigned seed = 1; seed <= 20; seed++) {
        ml_sampler s;
        float x[V], y[V];
        make_logits(x, seed);
        memcpy(y, x, sizeof x);
        ml_sampler_init(&s, V, 1.0f, 0.9f, seed, scratch.b);
        ml_sampler_set_filters(&s, 1, 0.0f, 1.0f, 0, CTX, &err);
        CHECK(ml_sample(&s, x) == ml_argmax(y, V), "top-k 1 is not the argmax (seed %u)", seed);
    }
    GROUP_DONE("sampler: top-k, min-p and top-p pick the reference's token for the same coin", before);
}

/* The defaults (filters off) pick what the sampler picked before them. */
static void test_defaults(void) {
    int before = tl_failed, same = 0;
    ml_err err;
    for (unsigned seed = 1; seed <= 200; seed++) {
        ml_sampler a, b;
        float x[V], y[V];
        make_logits(x, seed);
        memcpy(y, x, sizeof x);
        float topp = seed % 3 == 0 ? 1.0f : 0.9f;
        ml_sampler_init(&a, V, 1.0f, topp, seed, scratch.b);
        int ta = ml_sample(&a, x);
        ml_sampler_init(&b, V, 1.0f, topp, seed, scratch.b);
        ml_sampler_set_filters(&b, 0, 0.0f, 1.0f, 64, CTX, &err);
        for (int t = 0; t < 100; t++) ml_sampler_accept(&b, t); /* a penalty of 1 changes nothing */
        int tb = ml_sample(&b, y);
        same += ta == tb && memcmp(x, y, sizeof x) == 0;
    }
    CHECK(same == 200, "%d of 200 picks unchanged with the filters off", same);
    GROUP_DONE("sampler: filters off (top-k 0, min-p 0, penalty 1) = the sampler without them", before);
}

/* Penalty: greedy leaves the penalized logits in the buffer. */
static void test_penalty(void) {
    int before = tl_failed;
    ml_err err;
    static const struct {
        float pen;
        int last_n, n_tokens;
    } cases[] = {{1.3f, 64, 10}, {1.3f, 10, 100}, {0.5f, 5, 7}, {2.0f, -1, 300}, {1.1f, 1, 3}, {1.7f, 0, 50}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        ml_sampler s;
        float x[V], want[V];
        make_logits(x, 7u + (unsigned)ci);
        memcpy(want, x, sizeof x);
        ml_sampler_init(&s, V, 0.0f, 0.9f, 1, scratch.b);
        CHECK(ml_sampler_set_filters(&s, 0, 0.0f, cases[ci].pen, cases[ci].last_n, CTX, &err) == ML_OK,
              "set_filters: %s", err.msg);
        int toks[400];
        srand(99u + (unsigned)ci);
        for (int t = 0; t < cases[ci].n_tokens; t++) {
            toks[t] = rand() % 40; /* repeats */
            ml_sampler_accept(&s, toks[t]);
        }
        int window = cases[ci].last_n < 0 ? CTX : cases[ci].last_n;
        int first = cases[ci].n_tokens > window ? cases[ci].n_tokens - window : 0;
        for (int t = first; t < cases[ci].n_tokens; t++) {
            int dup = 0;
            for (int u = first; u < t; u++) dup |= toks[u] == toks[t];
            if (dup) continue;
            float *l = &want[toks[t]];
            *l = *l > 0.0f ? *l / cases[ci].pen : *l * cases[ci].pen;
        }
        int got = ml_sample(&s, x);
        CHECK(memcmp(x, want, sizeof x) == 0, "penalty %g, last %d of %d tokens: logits differ from the reference",
              (double)cases[ci].pen, cases[ci].last_n, cases[ci].n_tokens);
        CHECK(got == ml_argmax(want, V), "penalty %g: greedy pick %d, reference %d", (double)cases[ci].pen, got,
              ml_argmax(want, V));
    }
    GROUP_DONE("sampler: repetition penalty = llama.cpp's rule over the window's distinct tokens", before);
}

static void test_refused(void) {
    int before = tl_failed;
    ml_sampler s;
    ml_err err;
    ml_sampler_init(&s, V, 1.0f, 0.9f, 1, scratch.b);
    static const struct {
        int k;
        float min_p, pen;
        int last_n;
        const char *says;
    } bad[] = {{-1, 0, 1, 64, "top-k"},   {0, -0.1f, 1, 64, "min-p"},         {0, 1.5f, 1, 64, "min-p"},
               {0, 0, 0, 64, "penalty"},  {0, 0, -1, 64, "penalty"},          {0, 0, 1, -2, "repeat-last-n"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err.msg[0] = 0;
        ml_status st = ml_sampler_set_filters(&s, bad[i].k, bad[i].min_p, bad[i].pen, bad[i].last_n, CTX, &err);
        CHECK(st == ML_E_ARG && strstr(err.msg, bad[i].says), "case %zu: status %d, message '%s' (wanted '%s')", i,
              (int)st, err.msg, bad[i].says);
    }
    GROUP_DONE("sampler: negative top-k, min-p outside [0, 1], penalty <= 0 refused with a message", before);
}

/* A temperature so small (or a penalty so strong) that the largest logit
 * over it overflows to +-inf: the draw is the greedy limit (the first
 * largest logit), never the NaN softmax's garbage; and the RNG advances
 * by one draw, as for any sampled token. Ids outside the vocabulary given
 * to accept are ignored (the penalty would index the logits by them). */
static void test_overflow_and_bad_ids(void) {
    int before = tl_failed;
    static const float temps[] = {1e-38f, 1e-42f, 1e-45f};
    for (size_t ti = 0; ti < sizeof temps / sizeof *temps; ti++)
        for (int sign = 0; sign < 2; sign++) {
            float x[V];
            make_logits(x, 31u + (unsigned)ti);
            for (int i = 0; i < V; i++) x[i] = sign ? -fabsf(x[i]) - 1.0f : x[i]; /* all negative: -inf */
            const int want = ml_argmax(x, V);
            ml_sampler s;
            ml_sampler_init(&s, V, temps[ti], 0.9f, 5, scratch.b);
            int got = ml_sample(&s, x);
            uint64_t state = 5;
            ref_coin(&state);
            CHECK(got == want && s.rng == state, "temperature %g, %s logits: token %d (greedy %d), rng %s", (double)temps[ti],
                  sign ? "negative" : "mixed", got, want, s.rng == state ? "one draw" : "not one draw");
        }
    ml_sampler a, b;
    ml_err err;
    float xa[V], xb[V];
    make_logits(xa, 77u);
    memcpy(xb, xa, sizeof xa);
    ml_sampler_init(&a, V, 0.0f, 0.9f, 1, scratch.b);
    CHECK(ml_sampler_set_filters(&a, 0, 0.0f, 1.5f, 16, CTX, &err) == ML_OK, "set_filters: %s", err.msg);
    static const int odd[] = {-1, V, V + 5, -2147483647 - 1, 2147483647};
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) ml_sampler_accept(&a, odd[i]);
    ml_sampler_accept(&a, 3);
    int ga = ml_sample(&a, xa);
    ml_sampler_init(&b, V, 0.0f, 0.9f, 1, scratch.b);
    CHECK(ml_sampler_set_filters(&b, 0, 0.0f, 1.5f, 16, CTX, &err) == ML_OK, "set_filters: %s", err.msg);
    ml_sampler_accept(&b, 3);
    int gb = ml_sample(&b, xb);
    CHECK(ga == gb && memcmp(xa, xb, sizeof xa) == 0, "ids outside the vocab changed the penalized logits");
    GROUP_DONE("sampler: an overflowing temperature draws the greedy token; ids outside the vocab are not penalized",
               before);
}

/* ml_argmax against its definition, the one-pass `if (x[i] > x[best])`:
 * lengths around its 8 running maxima, many ties, signed zeros, infinities
 * and NaNs (never picked, and a NaN first gives 0). */
static void test_argmax(void) {
    int before = tl_failed;
    static const float vals[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.5f, 1e30f, -1e30f};
    float x[40];
    srand(7);
    for (int n = 1; n <= 40; n++)
        for (int trial = 0; trial < 200; trial++) {
            for (int i = 0; i < n; i++) {
                int r = rand() % 12;
                x[i] = r < 7 ? vals[r] : r == 7 ? INFINITY : r == 8 ? -INFINITY : r == 9 ? NAN : (float)(rand() % 5);
            }
            int want = 0;
            for (int i = 1; i < n; i++)
                if (x[i] > x[want]) want = i;
            int got = ml_argmax(x, n);
            CHECK(got == want, "argmax of %d values (trial %d): %d, the one-pass loop %d", n, trial, got, want);
        }
    GROUP_DONE("argmax: the first largest value, as the one-pass loop (ties, zeros, infinities, NaN)", before);
}

int ml_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    test_filters();
    test_defaults();
    test_penalty();
    test_refused();
    test_overflow_and_bad_ids();
    test_argmax();
    return tl_summary();
}
