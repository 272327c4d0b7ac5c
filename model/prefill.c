/* Batched prompt prefill: a prompt checked, then run through the one layer
 * sequence (model/transformer.c) in batches of at most m->b.cap tokens, so
 * each weight matrix is read once per batch instead of once per token. A
 * token's keys, values and logits are bit for bit those of ml_forward. */
#include "model/forward_check.h"
#include "model/model.h"

ml_status ml_forward_batch(ml_model *m, const int *tokens, int n, int pos0, ml_logits_fn each, void *ud,
                           ml_err *err) {
    const ml_config *c = &m->cfg;
    if (n < 1) return ml_errf(err, ML_E_ARG, "batch: expected at least 1 token, got %d", n);
    if (pos0 < 0 || pos0 >= c->max_seq || n > c->max_seq - pos0)
        return ml_errf(err, ML_E_ARG, "batch: positions %d..%lld: expected within 0..%d (context)", pos0,
                       (long long)pos0 + n - 1, c->max_seq - 1);
    for (int t = 0; t < n; t++)
        if (tokens[t] < 0 || tokens[t] >= c->vocab)
            return ml_errf(err, ML_E_ARG, "batch: token %d: expected 0..%d, got %d", t, c->vocab - 1, tokens[t]);
    /* A batch of one token puts its logits in m->s.logits: no b->logits needed. */
    if (each && !m->b.logits && m->b.cap > 1)
        return ml_errf(err, ML_E_ARG, "batch: every token's logits asked for, but the model was opened "
                       "without all_logits");
    for (int i = 0; i < n; i += m->b.cap) {
        int len = n - i < m->b.cap ? n - i : m->b.cap;
        ml_status st = ml_forward_step(m, tokens + i, len, pos0 + i, i + len == n, each, ud, err);
        if (st) return st;
    }
    return ML_OK;
}
