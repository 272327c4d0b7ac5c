#include "model/generate.h"

/* The prompt's logits, position by position, each followed by its forced
 * next token: the order the generation loop keeps for sampled ones. */
typedef struct {
    const int *prompt;
    int n_prompt, vocab;
    const ml_gen_callbacks *cb;
} prompt_echo;

static ml_status echo_prompt_logits(void *ud, int pos, const float *logits, ml_err *err) {
    const prompt_echo *e = ud;
    (void)err;
    e->cb->on_logits(e->cb->ud, pos, logits, e->vocab);
    if (pos + 1 < e->n_prompt && e->cb->on_token) e->cb->on_token(e->cb->ud, e->prompt[pos], e->prompt[pos + 1]);
    return ML_OK;
}

int ml_gen_is_stop(const ml_gen_callbacks *cb, int token) {
    if (!cb || cb->n_stop <= 0) return token == ML_TOK_BOS || token == ML_TOK_EOS;
    for (int i = 0; i < cb->n_stop && i < 4; i++)
        if (token == cb->stop[i]) return 1;
    return 0;
}

ml_status ml_generate_prompt(ml_model *m, ml_sampler *smp, const int *prompt, int n_prompt, int steps,
                             const ml_gen_callbacks *cb, int *n_pos, ml_err *err) {
    *n_pos = 0;
    if (n_prompt < 1)
        return ml_errf(err, ML_E_ARG, "prompt: expected at least 1 token (BOS), got %d", n_prompt);
    if (steps > m->cfg.max_seq)
        return ml_errf(err, ML_E_ARG, "steps: expected at most the context %d, got %d",
                       m->cfg.max_seq, steps);
    if (n_prompt > steps)
        return ml_errf(err, ML_E_ARG, "prompt: %d tokens do not fit in %d steps", n_prompt, steps);

    /* The prompt in one call: batched if the model was opened with a batch. */
    int each = cb && cb->on_logits;
    prompt_echo e = {prompt, n_prompt, m->cfg.vocab, cb};
    ml_status s = ml_forward_batch(m, prompt, n_prompt, 0, each ? echo_prompt_logits : NULL, &e, err);
    if (s) return s;
    *n_pos = n_prompt;
    if (!each && cb && cb->on_token)
        for (int i = 1; i < n_prompt; i++) cb->on_token(cb->ud, prompt[i - 1], prompt[i]);
    if (cb && cb->on_prompt_done) cb->on_prompt_done(cb->ud, n_prompt);
    /* The repetition penalty's window sees the prompt and every sampled token. */
    for (int i = 0; i < n_prompt; i++) ml_sampler_accept(smp, prompt[i]);
    return ML_OK;
}

ml_status ml_generate(ml_model *m, ml_sampler *smp, const int *prompt, int n_prompt, int steps,
                      const ml_gen_callbacks *cb, int *n_pos, ml_err *err) {
    ml_status s = ml_generate_prompt(m, smp, prompt, n_prompt, steps, cb, n_pos, err);
    if (s) return s;
    /* Then token by token from the last prompt position's logits. */
    int token = prompt[n_prompt - 1];
    for (int pos = n_prompt - 1;;) {
        int next = ml_sample(smp, m->s.logits);
        if (ml_gen_is_stop(cb, next)) break;
        ml_sampler_accept(smp, next);
        if (cb && cb->on_token) cb->on_token(cb->ud, token, next);
        if (cb && cb->should_stop && cb->should_stop(cb->ud)) break;
        token = next;
        if (++pos >= steps) break;
        if ((s = ml_forward(m, token, pos, err))) return s;
        *n_pos = pos + 1;
        if (cb && cb->on_logits) cb->on_logits(cb->ud, pos, m->s.logits, m->cfg.vocab);
    }
    return ML_OK;
}
