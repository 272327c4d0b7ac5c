/* Writes small .mlb files for the C tests: a valid random model of any
 * shape, following model/mlb.h array by array, so tests can then damage it. */
#ifndef ML_TEST_MLB_WRITER_H
#define ML_TEST_MLB_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/quant.h"
#include "model/mlb.h"

static inline ml_mlb_header mlbw_header(uint32_t dim, uint32_t n_layers, uint32_t n_heads,
                                        uint32_t n_kv_heads, uint32_t hidden, uint32_t vocab,
                                        uint32_t max_seq, uint32_t wtype, uint32_t shared) {
    ml_mlb_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, ML_MLB_MAGIC, 4);
    h.version = ML_MLB_VERSION;
    h.dim = dim, h.n_layers = n_layers, h.n_heads = n_heads, h.n_kv_heads = n_kv_heads;
    h.hidden_dim = hidden, h.vocab = vocab, h.max_seq = max_seq;
    h.rope_theta = 10000.0f, h.norm_eps = 1e-5f, h.wtype = wtype, h.shared_classifier = shared;
    return h;
}

typedef struct {
    FILE *f;
    uint64_t off;
    uint64_t rng;
} mlbw;

static inline uint32_t mlbw_rand(mlbw *w) {
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return (uint32_t)(w->rng >> 11);
}

static inline void mlbw_pad(mlbw *w) {
    while (w->off % ML_ALIGN) {
        fputc(0, w->f);
        w->off++;
    }
}

static inline void mlbw_norm(mlbw *w, uint32_t n) {
    mlbw_pad(w);
    for (uint32_t i = 0; i < n; i++) {
        float v = 0.8f + (float)(mlbw_rand(w) % 1000) / 2500.0f;
        fwrite(&v, 4, 1, w->f);
    }
    w->off += 4ull * n;
}

/* Random quants and scales chosen so activations stay in a sane range. */
static inline void mlbw_matrix(mlbw *w, uint32_t wtype, uint32_t rows, uint32_t cols) {
    uint64_t n = (uint64_t)rows * cols, qb = ml_quant_bytes((ml_type)wtype, n);
    mlbw_pad(w);
    for (uint64_t i = 0; i < qb; i++) {
        int v = wtype == ML_TYPE_Q8_0 ? (int)(mlbw_rand(w) % 255) - 127 : (int)(mlbw_rand(w) & 0xFF);
        fputc(v & 0xFF, w->f);
    }
    w->off += qb;
    mlbw_pad(w);
    float scale = (wtype == ML_TYPE_Q8_0 ? 1.0f / 127.0f : 1.0f / 8.0f) / (float)cols * 8.0f;
    for (uint64_t i = 0; i < n / ML_QK; i++) {
        float d = scale * (0.5f + (float)(mlbw_rand(w) % 1000) / 1000.0f);
        fwrite(&d, 4, 1, w->f);
    }
    w->off += 4 * (n / ML_QK);
}

/* Write a complete random model; returns its size in bytes, 0 on I/O error. */
static inline uint64_t mlbw_write(const char *path, const ml_mlb_header *h, uint64_t seed) {
    mlbw w = {fopen(path, "wb"), 0, seed * 2654435761u + 1};
    if (!w.f) return 0;
    fwrite(h, sizeof *h, 1, w.f);
    w.off = sizeof *h;
    uint32_t hd = h->dim / h->n_heads, kv = h->n_kv_heads * hd, t = h->wtype;
    mlbw_matrix(&w, t, h->vocab, h->dim);
    for (uint32_t l = 0; l < h->n_layers; l++) {
        mlbw_norm(&w, h->dim);
        mlbw_matrix(&w, t, h->dim, h->dim);
        mlbw_matrix(&w, t, kv, h->dim);
        mlbw_matrix(&w, t, kv, h->dim);
        mlbw_matrix(&w, t, h->dim, h->dim);
        mlbw_norm(&w, h->dim);
        mlbw_matrix(&w, t, h->hidden_dim, h->dim);
        mlbw_matrix(&w, t, h->dim, h->hidden_dim);
        mlbw_matrix(&w, t, h->hidden_dim, h->dim);
    }
    mlbw_norm(&w, h->dim);
    if (!h->shared_classifier) mlbw_matrix(&w, t, h->vocab, h->dim);
    return fclose(w.f) == 0 ? w.off : 0;
}

#endif
