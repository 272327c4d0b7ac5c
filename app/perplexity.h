/* ml_perplexity's arithmetic and its KL base file, free of printing.
 *
 * Scoring follows llama-perplexity: the tokens are cut into chunks of ctx
 * tokens, each chunk starts with BOS and is evaluated from position 0, and
 * only the second half is scored: the logits at positions ctx/2 .. ctx-2
 * predict tokens ctx/2+1 .. ctx-1, so each scored token has at least
 * ctx/2+1 tokens of context.
 *
 * KL base file (written by one run, streamed back by a later one):
 *   64-byte header, little-endian:
 *     char magic[8] "MLKLBAS1"
 *     u32 vocab, ctx, n_chunks, n_scored (scored positions per chunk)
 *     u64 tokens_hash   FNV-1a 64 over the u32 token ids of every chunk
 *     32 bytes zero
 *   then n_chunks * n_scored records in scoring order, each the vocab float32
 *   logits (little-endian, as every supported target) at that position.
 * A later run must use a model of the same vocab and the same text and -c:
 * anything else is refused (ML_E_FORMAT) with what differs. */
#ifndef ML_PERPLEXITY_H
#define ML_PERPLEXITY_H

#include <stdint.h>
#include <stdio.h>

#include "core/status.h"

/* The chunk layout of n_tokens tokens at ctx (>= 4) tokens per chunk. */
typedef struct {
    int ctx, n_chunks, first; /* first: first scored logits position, ctx/2 */
    int n_scored;             /* scored tokens per chunk: ctx - 1 - first */
} ml_ppl_layout;
ml_ppl_layout ml_ppl_layout_of(int n_tokens, int ctx);

/* A row's log-softmax normalizer, kept in two parts: log p_i = (x_i - mx)
 * - ls (ml_log_prob). Summed as mx + ls it would lose ls beside a huge mx
 * (logits of 1e20 would all get p = 1). */
typedef struct { double mx, ls; } ml_log_norm;
ml_log_norm ml_log_norm_of(const float *x, int n);
static inline double ml_log_prob(ml_log_norm z, float x) { return ((double)x - z.mx) - z.ls; }

/* Mean and standard error of the mean of a stream of values, in double. */
typedef struct { double sum, sum2; long n; } ml_mean_acc;
void ml_mean_add(ml_mean_acc *a, double v);
double ml_mean(const ml_mean_acc *a);
double ml_mean_stderr(const ml_mean_acc *a); /* 0 for fewer than 2 values */

/* One position against a base: KL(base || this) over the vocab, from both
 * logit rows and their normalizers (identical rows give exactly 0). */
double ml_kl_div(const float *base, ml_log_norm zb, const float *logits, ml_log_norm z, int vocab);

/* FNV-1a 64 over token ids as u32 little-endian. */
uint64_t ml_tokens_hash(const int *tokens, long n);

typedef struct {
    uint32_t vocab, ctx, n_chunks, n_scored;
    uint64_t tokens_hash;
} ml_kl_header;

#define ML_KL_HEADER_BYTES 64

ml_status ml_kl_write_header(FILE *f, const ml_kl_header *h, const char *path, ml_err *err);

/* Read and check f's header against want (every field must match) and its
 * size against the records want implies. */
ml_status ml_kl_read_header(FILE *f, const ml_kl_header *want, const char *path, ml_err *err);

/* The next record into row (vocab floats); a short read or a non-finite
 * logit is ML_E_FORMAT naming the record. */
ml_status ml_kl_read_row(FILE *f, float *row, int vocab, long index, const char *path, ml_err *err);

#endif
