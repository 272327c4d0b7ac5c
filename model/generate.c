#include "model/generate.h"

ml_status ml_generate(ml_model *m, ml_sampler *smp, const int *prompt, int n_prompt, int steps,
                      const ml_gen_callbacks *cb, int *n_pos, ml_err *err) {
    *n_pos = 0;
    if (n_prompt < 1)
        return ml_errf(err, ML_E_ARG, "prompt: expected at least 1 token (BOS), got %d", n_prompt);
    if (steps > m->cfg.max_seq)
        return ml_errf(err, ML_E_ARG, "steps: expected at most the context %d, got %d",
                       m->cfg.max_seq, steps);
    if (n_prompt > steps)
        return ml_errf(err, ML_E_ARG, "prompt: %d tokens do not fit in %d steps", n_prompt, steps);

    int token = prompt[0];
    for (int pos = 0; pos < steps; pos++) {
        ml_status s = ml_forward(m, token, pos, err);
        if (s) return s;
        *n_pos = pos + 1;
        if (cb && cb->on_logits) cb->on_logits(cb->ud, pos, m->s.logits, m->cfg.vocab);
        int next;
        if (pos + 1 < n_prompt) {
            next = prompt[pos + 1];
        } else {
            next = ml_sample(smp, m->s.logits);
            if (next == ML_TOKEN_BOS || next == ML_TOKEN_EOS) break;
        }
        if (cb && cb->on_token) cb->on_token(cb->ud, token, next);
        token = next;
    }
    return ML_OK;
}
