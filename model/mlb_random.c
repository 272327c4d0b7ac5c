/* The random .mlb writer of model/mlb_random.h: one walk over the array
 * order of model/mlb.h, which measures the file when it has no buffer. */
#include "model/mlb_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/quant.h"

/* ---- random numbers ------------------------------------------------------ */

uint64_t ml_rng_next(ml_rng *r) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

/* Eight bytes per number; a Q8_0 -128 becomes -127 (the format's range). */
void ml_rng_quants(ml_rng *r, int8_t *q, size_t n, int wtype) {
    for (size_t i = 0; i < n; i += 8) {
        uint64_t x = ml_rng_next(r);
        for (size_t j = 0; j < 8 && i + j < n; j++) {
            uint8_t b = (uint8_t)(x >> (8 * j));
            q[i + j] = (int8_t)(wtype == ML_TYPE_Q8_0 && b == 0x80 ? 0x81 : b);
        }
    }
}

void ml_rng_floats(ml_rng *r, float *v, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * (float)(ml_rng_next(r) >> 40) / 16777216.0f;
}

/* ---- the header ------------------------------------------------------------ */

ml_mlb_header ml_mlb_make_header(uint32_t dim, uint32_t n_layers, uint32_t n_heads, uint32_t n_kv_heads,
                                 uint32_t hidden_dim, uint32_t vocab, uint32_t max_seq, uint32_t wtype,
                                 uint32_t shared_classifier) {
    ml_mlb_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, ML_MLB_MAGIC, 4);
    h.version = ML_MLB_VERSION;
    h.dim = dim, h.n_layers = n_layers, h.n_heads = n_heads, h.n_kv_heads = n_kv_heads;
    h.hidden_dim = hidden_dim, h.vocab = vocab, h.max_seq = max_seq;
    h.rope_theta = 10000.0f, h.norm_eps = 1e-5f, h.wtype = wtype, h.shared_classifier = shared_classifier;
    return h;
}

/* ---- the arrays, in file order --------------------------------------------- */

typedef struct {
    unsigned char *buf; /* NULL: only count the bytes */
    uint64_t off;
    ml_rng rng;
    int wtype;
} writer;

/* To the next 64-byte boundary, writing the format's zero padding. */
static void pad(writer *w) {
    uint64_t at = (w->off + ML_ALIGN - 1) / ML_ALIGN * ML_ALIGN;
    if (w->buf) memset(w->buf + w->off, 0, (size_t)(at - w->off));
    w->off = at;
}

static void put_norm(writer *w, uint32_t n) {
    pad(w);
    if (w->buf) ml_rng_floats(&w->rng, (float *)(w->buf + w->off), n, 0.8f, 1.2f);
    w->off += 4ull * n;
}

/* Scales in [0.5, 1.5) / (largest quant * sqrt(cols)). */
static void put_matrix(writer *w, uint32_t rows, uint32_t cols) {
    uint64_t n = (uint64_t)rows * cols, qb = ml_quant_bytes((ml_type)w->wtype, n);
    pad(w);
    if (w->buf) ml_rng_quants(&w->rng, (int8_t *)(w->buf + w->off), (size_t)qb, w->wtype);
    w->off += qb;
    pad(w);
    float unit = 1.0f / ((w->wtype == ML_TYPE_Q8_0 ? ML_Q8_MAX : ML_Q4_OFFSET) * sqrtf((float)cols));
    if (w->buf) ml_rng_floats(&w->rng, (float *)(w->buf + w->off), (size_t)(n / ML_QK), 0.5f * unit, 1.5f * unit);
    w->off += 4 * (n / ML_QK);
}

static uint64_t walk(writer *w, const ml_mlb_header *h) {
    if (w->buf) memcpy(w->buf, h, sizeof *h);
    w->off = sizeof *h;
    uint32_t kv = h->n_kv_heads * (h->dim / h->n_heads);
    put_matrix(w, h->vocab, h->dim);
    for (uint32_t l = 0; l < h->n_layers; l++) {
        put_norm(w, h->dim);
        put_matrix(w, h->dim, h->dim);
        put_matrix(w, kv, h->dim);
        put_matrix(w, kv, h->dim);
        put_matrix(w, h->dim, h->dim);
        put_norm(w, h->dim);
        put_matrix(w, h->hidden_dim, h->dim);
        put_matrix(w, h->dim, h->hidden_dim);
        put_matrix(w, h->hidden_dim, h->dim);
    }
    put_norm(w, h->dim);
    if (!h->shared_classifier) put_matrix(w, h->vocab, h->dim);
    return w->off;
}

uint64_t ml_mlb_random_bytes(const ml_mlb_header *h) {
    writer w = {.buf = NULL, .wtype = (int)h->wtype};
    return walk(&w, h);
}

void ml_mlb_random_fill(unsigned char *buf, const ml_mlb_header *h, uint64_t seed) {
    /* splitmix-style spread, so seeds 1, 2, 3 start far apart (and never 0) */
    writer w = {.buf = buf, .rng = {seed * 0x9E3779B97F4A7C15ull | 1}, .wtype = (int)h->wtype};
    walk(&w, h);
}

ml_status ml_mlb_random_write(const char *path, const ml_mlb_header *h, uint64_t seed, ml_err *err) {
    uint64_t n = ml_mlb_random_bytes(h);
    unsigned char *buf = n <= SIZE_MAX ? malloc((size_t)n) : NULL;
    if (!buf) return ml_errf(err, ML_E_NOMEM, "%s: no memory for a %llu-byte model", path, (unsigned long long)n);
    ml_mlb_random_fill(buf, h, seed);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(buf, 1, (size_t)n, f) == n;
    if (f && fclose(f)) ok = 0;
    free(buf);
    return ok ? ML_OK : ml_errf(err, ML_E_IO, "%s: cannot write the model", path);
}
