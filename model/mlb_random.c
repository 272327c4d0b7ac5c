/* The random .mlb writer of model/mlb_random.h: one walk over the arrays of
 * the tensor table (model/mlb.h), into a buffer or to a file. */
#include "model/mlb_random.h"

#include <math.h>
#include <stdio.h>
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

/* Where the bytes go: into buf, or to f. */
typedef struct {
    unsigned char *buf;
    FILE *f;
    int io_error;
    uint64_t off;
    ml_rng rng;
    int wtype;
} writer;

/* Arrays are made in chunks, so a file needs no buffer of the model's size;
 * a multiple of 8, so the quants are the same bytes as in one piece. */
#define CHUNK 4096

static void emit(writer *w, const void *p, size_t n) {
    if (w->buf) memcpy(w->buf + w->off, p, n);
    else if (fwrite(p, 1, n, w->f) != n) w->io_error = 1;
    w->off += n;
}

/* Zero bytes up to off, the start of the next array (the format's padding). */
static void pad_to(writer *w, uint64_t off) {
    static const unsigned char zeros[ML_ALIGN];
    emit(w, zeros, (size_t)(off - w->off));
}

static void put_quants(writer *w, uint64_t n) {
    int8_t chunk[CHUNK];
    for (uint64_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? (size_t)(n - i) : CHUNK;
        ml_rng_quants(&w->rng, chunk, k, w->wtype);
        emit(w, chunk, k);
    }
}

static void put_floats(writer *w, uint64_t n, float lo, float hi) {
    float chunk[CHUNK / 4];
    for (uint64_t i = 0; i < n; i += CHUNK / 4) {
        size_t k = n - i < CHUNK / 4 ? (size_t)(n - i) : CHUNK / 4;
        ml_rng_floats(&w->rng, chunk, k, lo, hi);
        emit(w, chunk, 4 * k);
    }
}

/* Quants of any value; scales in [0.5, 1.5) / (largest quant * sqrt(cols));
 * F32 tensors (norm weights) in [0.8, 1.2). */
static void walk(writer *w, const ml_mlb_header *h) {
    emit(w, h, sizeof *h);
    ml_mlb_walk it;
    ml_mlb_array a;
    ml_mlb_walk_init(&it, h);
    while (ml_mlb_walk_next(&it, &a)) {
        pad_to(w, a.off);
        if (a.part == ML_MLB_QUANTS) {
            put_quants(w, a.bytes);
        } else if (a.part == ML_MLB_SCALES) {
            float unit = 1.0f / ((w->wtype == ML_TYPE_Q8_0 ? ML_Q8_MAX : ML_Q4_OFFSET) * sqrtf((float)a.cols));
            put_floats(w, a.bytes / 4, 0.5f * unit, 1.5f * unit);
        } else {
            put_floats(w, a.bytes / 4, 0.8f, 1.2f);
        }
    }
    /* version 2 sections: filler text ('x'), tokenizer then template */
    const uint64_t off[2] = {h->tok_off, h->tmpl_off}, bytes[2] = {h->tok_bytes, h->tmpl_bytes};
    for (int i = 0; h->version >= 2 && i < 2; i++) {
        if (!bytes[i]) continue;
        unsigned char chunk[CHUNK];
        memset(chunk, 'x', sizeof chunk);
        pad_to(w, off[i]);
        for (uint64_t n = 0; n < bytes[i]; n += CHUNK) emit(w, chunk, bytes[i] - n < CHUNK ? (size_t)(bytes[i] - n) : CHUNK);
    }
}

/* splitmix-style spread, so seeds 1, 2, 3 start far apart (and never at 0) */
static ml_rng seeded(uint64_t seed) { return (ml_rng){seed * 0x9E3779B97F4A7C15ull | 1}; }

uint64_t ml_mlb_random_bytes(const ml_mlb_header *h) { return ml_mlb_file_bytes(h); }

void ml_mlb_random_fill(unsigned char *buf, const ml_mlb_header *h, uint64_t seed) {
    writer w = {.buf = buf, .rng = seeded(seed), .wtype = (int)h->wtype};
    walk(&w, h);
}

ml_status ml_mlb_random_write(const char *path, const ml_mlb_header *h, uint64_t seed, ml_err *err) {
    writer w = {.f = fopen(path, "wb"), .rng = seeded(seed), .wtype = (int)h->wtype};
    if (!w.f) return ml_errf(err, ML_E_IO, "%s: cannot create the model file", path);
    walk(&w, h);
    if (fclose(w.f) || w.io_error) return ml_errf(err, ML_E_IO, "%s: cannot write the model", path);
    return ML_OK;
}
