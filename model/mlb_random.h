/* A valid .mlb model with random weights, of any shape: the one .mlb writer
 * in C, used by the tests (which then damage the file) and by ml_bench
 * (which decodes with it in memory). Same header and seed, same bytes. */
#ifndef ML_MLB_RANDOM_H
#define ML_MLB_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "model/mlb.h"

/* xorshift64: cheap, and the same numbers on every target. */
typedef struct { uint64_t s; } ml_rng; /* s != 0 */
uint64_t ml_rng_next(ml_rng *r);

/* n random quant bytes of type wtype: Q8_0 in [-127, 127], Q4_0 any byte. */
void ml_rng_quants(ml_rng *r, int8_t *q, size_t n, int wtype);
/* n floats uniform in [lo, hi). */
void ml_rng_floats(ml_rng *r, float *v, size_t n, float lo, float hi);

/* The header of a model of this shape (rope_theta 10000, norm_eps 1e-5). */
ml_mlb_header ml_mlb_make_header(uint32_t dim, uint32_t n_layers, uint32_t n_heads, uint32_t n_kv_heads,
                                 uint32_t hidden_dim, uint32_t vocab, uint32_t max_seq, uint32_t wtype,
                                 uint32_t shared_classifier);

/* h as a version 2 header with fp16 block scales (stype 1). */
void ml_mlb_header_f16_scales(ml_mlb_header *h);

/* Bytes of the .mlb file of header h. */
uint64_t ml_mlb_random_bytes(const ml_mlb_header *h);

/* The whole file into buf (ml_mlb_random_bytes(h) bytes, any alignment of 4):
 * the header, random quants, scales that keep every weight within
 * +-1.5/sqrt(cols) so activations stay O(1) over many layers, norm weights in
 * [0.8, 1.2), zero padding. */
void ml_mlb_random_fill(unsigned char *buf, const ml_mlb_header *h, uint64_t seed);

/* The same bytes written to path (no buffer of the model's size). */
ml_status ml_mlb_random_write(const char *path, const ml_mlb_header *h, uint64_t seed, ml_err *err);

#endif
