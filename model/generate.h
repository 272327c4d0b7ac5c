/* The decoding loop shared by ml_run, the tests and the benchmark: feed the
 * prompt (ml_forward_batch: batched when the model was opened with a batch),
 * then sample token by token until a stop token or `steps`. */
#ifndef ML_GENERATE_H
#define ML_GENERATE_H

#include "model/model.h"
#include "model/sampler.h"
#include "model/tokenizer.h" /* ML_TOK_BOS, ML_TOK_EOS: the stop tokens */

typedef struct {
    /* Called for every position with its logits, before sampling. Optional;
     * with a batch, the model must be opened with all_logits. */
    void (*on_logits)(void *ud, int pos, const float *logits, int vocab);
    /* Called with each token that follows `prev` (forced or sampled), except
     * a final stop token. Optional. */
    void (*on_token)(void *ud, int prev, int token);
    /* Called once the whole prompt has run, before the first sampled
     * token (ml_run times the prompt with it). Optional. */
    void (*on_prompt_done)(void *ud, int n_prompt);
    /* Asked after each sampled token has reached on_token: nonzero ends the
     * generation there (ml_run's --stop). Optional. */
    int (*should_stop)(void *ud);
    void *ud;
    /* The tokens that end the generation when sampled (not emitted): stop[0
     * .. n_stop). n_stop 0: llama2.c's BOS and EOS (ML_TOK_BOS, ML_TOK_EOS). */
    int stop[4];
    int n_stop;
} ml_gen_callbacks;

/* prompt[0] is normally BOS; 1 <= n_prompt <= steps <= context.
 * Like llama2.c, runs `steps` positions and emits the token that follows
 * each (the last one is emitted, never fed); stops early when a sampled
 * token is BOS or EOS (llama2.c-trained models end a story with BOS), or
 * one of cb->stop when it names some.
 * *n_pos: positions run. The prompt's forced tokens reach on_token after
 * the prompt has run (with on_logits, each after its position's logits). */
ml_status ml_generate(ml_model *m, ml_sampler *smp, const int *prompt, int n_prompt, int steps,
                      const ml_gen_callbacks *cb, int *n_pos, ml_err *err);

/* ml_generate's first half, shared with speculative decoding
 * (model/speculate.h): the checks, the prompt with its callbacks, the
 * prompt's tokens into the sampler's history; the last prompt position's
 * logits are left in m->s.logits, not yet sampled. */
ml_status ml_generate_prompt(ml_model *m, ml_sampler *smp, const int *prompt, int n_prompt, int steps,
                             const ml_gen_callbacks *cb, int *n_pos, ml_err *err);

/* Nonzero when a sampled token ends the generation (cb->stop, or BOS and
 * EOS when it names none): the rule ml_generate and speculation share. */
int ml_gen_is_stop(const ml_gen_callbacks *cb, int token);

#endif
