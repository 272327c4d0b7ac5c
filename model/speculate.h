/* Speculative decoding whose output is plain decoding's, bit for bit: a
 * drafter guesses the next tokens (prompt lookup: what followed the latest
 * earlier occurrence of the context's longest repeated suffix; or a smaller
 * draft model, greedy), and the target model checks the last accepted token
 * and the drafts in one batch (ml_forward_batch, every position's logits).
 * A batch's logits are those of ml_forward token by token (model/prefill.c),
 * so the sampler draws each position exactly as ml_generate would, with the
 * same RNG calls in the same order; it goes on while its token equals the
 * draft and stops at the first difference, keeping its own token. Drafts
 * past that are never sampled, so the sampler's state and every emitted
 * token, logits row and callback are ml_generate's; the KV rows the rejected
 * drafts wrote are overwritten by the next batch. Only the speed changes.
 *
 * Buffers are allocated by ml_spec_init (at load); generation allocates
 * nothing. */
#ifndef ML_SPECULATE_H
#define ML_SPECULATE_H

#include "model/generate.h"
#include "model/model.h"
#include "model/sampler.h"
#include "model/tok.h"

#define ML_SPEC_MAX_DRAFT 64   /* the largest --lookup / --draft */
#define ML_LOOKUP_MIN_NGRAM 2  /* a lookup needs a repeated suffix this long ... */
#define ML_LOOKUP_MAX_NGRAM 8  /* ... and prefers the longest, up to this */

/* ---- prompt lookup ---------------------------------------------------------- */

/* The longest suffix of ctx[0..n) (min_ngram .. max_ngram tokens) that also
 * ends earlier in ctx, at its latest such place; the up to max_out tokens
 * that followed it there go to out. When they run into the suffix itself
 * (a cycle shorter than max_out), the cycle is repeated. Returns how many
 * were proposed: 0 when no suffix of min_ngram tokens repeats. */
int ml_lookup_propose(const int *ctx, int n, int min_ngram, int max_ngram, int *out, int max_out);

/* ---- the speculative decoder ------------------------------------------------- */

typedef struct {
    int max_draft;   /* 1 .. ML_SPEC_MAX_DRAFT drafts per batch, at most (capped at context - 1) */
    ml_model *draft; /* NULL: prompt lookup; else the draft model (same vocab, context
                        >= the target's), opened by the caller, closed after ml_spec_free */
} ml_spec_opts;

typedef struct {
    ml_spec_opts o;
    int *ctx;        /* (max_seq + 1) the text so far: prompt, then every emitted token */
    int n_ctx, max_seq;
    int *batch;      /* (max_draft + 1) the token to feed, then the drafts */
    int k;           /* the draft length now (adaptive): 1 at first, doubling up to max_draft */
    int pause, wait; /* after refused drafts: steps to run without drafting, and left of them */
    int draft_pos;   /* draft model: its KV cache holds ctx[0..draft_pos) */
    long drafted;    /* drafts checked */
    long accepted;   /* drafts the sampler confirmed */
    long batches;    /* target model steps (a batch of 1 + drafts each) */
} ml_spec;

/* Check o against the target model m (opened with all_logits and a batch of
 * at least max_draft + 1, or the context; a draft model with m's vocab and at least m's
 * context) and allocate the buffers: ML_E_ARG naming what does not fit,
 * ML_E_NOMEM. On failure nothing stays allocated. */
ml_status ml_spec_init(ml_spec *sp, const ml_model *m, const ml_spec_opts *o, ml_err *err);
void ml_spec_free(ml_spec *sp);

/* A draft model's tokenizer against the target's: the same pieces (bytes),
 * in the same order; otherwise ML_E_ARG naming the first id that differs. */
ml_status ml_spec_check_tokenizers(const ml_tok *target, const ml_tok *draft, ml_err *err);

/* ml_generate, speculatively: the same arguments, checks, callbacks and
 * results (tokens, logits, *n_pos, the sampler's state). sp's counters add
 * up this run's drafts. One difference, for damaged models only: values
 * that overflow (ML_E_FORMAT) are checked at every position of a batch, so
 * a refused draft's position can fail where plain decoding never runs. */
ml_status ml_generate_spec(ml_model *m, ml_sampler *smp, ml_spec *sp, const int *prompt, int n_prompt, int steps,
                           const ml_gen_callbacks *cb, int *n_pos, ml_err *err);

#endif
