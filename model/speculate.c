#include "model/speculate.h"

#include <stdlib.h>
#include <string.h>

/* ---- prompt lookup ---------------------------------------------------------- */

int ml_lookup_propose(const int *ctx, int n, int min_ngram, int max_ngram, int *out, int max_out) {
    if (n < 2 || max_out < 1 || min_ngram < 1 || max_ngram < min_ngram) return 0;
    /* Every earlier place e where the last token occurs, latest first: the
     * suffix matches back from there for len tokens (the two may overlap,
     * which is how a short cycle is found). The longest wins; a tie, the latest. */
    int best_len = 0, best_end = -1;
    const int last = ctx[n - 1];
    for (int e = n - 2; e >= 0 && best_len < max_ngram; e--) {
        if (ctx[e] != last) continue;
        int len = 1;
        while (len < max_ngram && len <= e && ctx[e - len] == ctx[n - 1 - len]) len++;
        if (len > best_len) best_len = len, best_end = e;
    }
    if (best_len < min_ngram) return 0;
    /* What followed: ctx[best_end + 1 ..]; past ctx's end the drafts continue
     * the cycle of period n - 1 - best_end, i.e. their own earlier ones. */
    for (int i = 0; i < max_out; i++) {
        int j = best_end + 1 + i;
        out[i] = j < n ? ctx[j] : out[j - n];
    }
    return max_out;
}

/* ---- set-up ----------------------------------------------------------------- */

ml_status ml_spec_init(ml_spec *sp, const ml_model *m, const ml_spec_opts *o, ml_err *err) {
    memset(sp, 0, sizeof *sp);
    const ml_config *c = &m->cfg;
    if (o->max_draft < 1 || o->max_draft > ML_SPEC_MAX_DRAFT)
        return ml_errf(err, ML_E_ARG, "draft length: expected 1..%d tokens, got %d", ML_SPEC_MAX_DRAFT,
                       o->max_draft);
    /* A batch never runs past the context: a short one caps the drafts. */
    int max_draft = o->max_draft < c->max_seq - 1 ? o->max_draft : c->max_seq - 1;
    if (m->b.cap < max_draft + 1 || !m->b.logits)
        return ml_errf(err, ML_E_ARG, "speculation: the model must be opened with all_logits and a batch of at "
                       "least %d (drafts + 1), got batch %d%s", max_draft + 1, m->b.cap,
                       m->b.logits ? "" : " without all_logits");
    if (o->draft) {
        const ml_config *d = &o->draft->cfg;
        if (d->vocab != c->vocab)
            return ml_errf(err, ML_E_ARG, "draft model: vocab %d, the model's is %d: they need the same tokenizer",
                           d->vocab, c->vocab);
        if (d->max_seq < c->max_seq)
            return ml_errf(err, ML_E_ARG, "draft model: its context of %d tokens is shorter than the model's %d "
                           "(cap the run's context with -c %d)", d->max_seq, c->max_seq, d->max_seq);
    }
    sp->o = *o;
    sp->o.max_draft = max_draft;
    sp->ctx = malloc(((size_t)c->max_seq + 1) * sizeof *sp->ctx);
    sp->batch = malloc(((size_t)max_draft + 1) * sizeof *sp->batch);
    if (!sp->ctx || !sp->batch) {
        ml_spec_free(sp);
        return ml_errf(err, ML_E_NOMEM, "speculation: no memory for a context of %d tokens", c->max_seq);
    }
    sp->k = 1;
    sp->max_seq = c->max_seq;
    return ML_OK;
}

void ml_spec_free(ml_spec *sp) {
    free(sp->ctx);
    free(sp->batch);
    sp->ctx = sp->batch = NULL;
}

ml_status ml_spec_check_tokenizers(const ml_tok *target, const ml_tok *draft, ml_err *err) {
    int n = ml_tok_vocab(target);
    if (target->kind != draft->kind)
        return ml_errf(err, ML_E_ARG, "draft tokenizer: %s, the model's is %s", ml_tok_kind_name(draft),
                       ml_tok_kind_name(target));
    if (ml_tok_vocab(draft) != n)
        return ml_errf(err, ML_E_ARG, "draft tokenizer: %d pieces, the model's has %d", ml_tok_vocab(draft), n);
    for (int i = 0; i < n; i++) {
        size_t la = 0, lb = 0;
        const char *a = ml_tok_text(target, i, &la), *b = ml_tok_text(draft, i, &lb);
        if (la != lb || memcmp(a, b, la))
            /* a piece's text is not NUL-terminated (BPE pieces lie end to end) */
            return ml_errf(err, ML_E_ARG, "draft tokenizer: piece %d differs from the model's ('%.*s' vs '%.*s')",
                           i, (int)(lb < 40 ? lb : 40), b ? b : "", (int)(la < 40 ? la : 40), a ? a : "");
    }
    return ML_OK;
}

/* ---- drafting ---------------------------------------------------------------- */

/* Up to k drafts for what follows ctx into out. A draft model first catches
 * up with the tokens it has not seen (a batch), then runs greedily: k - 1
 * steps, the last draft is never fed to it. */
static ml_status propose(ml_spec *sp, int k, int *out, int *n_out, ml_err *err) {
    *n_out = 0;
    if (k < 1) return ML_OK;
    if (!sp->o.draft) {
        *n_out = ml_lookup_propose(sp->ctx, sp->n_ctx, ML_LOOKUP_MIN_NGRAM, ML_LOOKUP_MAX_NGRAM, out, k);
        return ML_OK;
    }
    ml_model *d = sp->o.draft;
    int n = sp->n_ctx;
    ml_status s = ml_forward_batch(d, sp->ctx + sp->draft_pos, n - sp->draft_pos, sp->draft_pos, NULL, NULL, err);
    if (s) return s;
    sp->draft_pos = n;
    for (int i = 0; i < k; i++) {
        out[i] = ml_argmax(d->s.logits, d->cfg.vocab);
        if (i + 1 < k && (s = ml_forward(d, out[i], n + i, err))) return s;
    }
    *n_out = k;
    return ML_OK;
}

/* The next draft length from this batch's: a fully confirmed draft doubles,
 * a partly confirmed one shrinks to what was confirmed plus one. A refused
 * first draft also pauses drafting for a few steps (1, 2, 4, .. 32 after
 * refusals in a row), so a text the drafter cannot predict decodes at about
 * plain speed: each such step is a batch of one. */
#define MAX_PAUSE 32
static void adapt(ml_spec *sp, int k, int accepted) {
    if (k < 1) return;
    if (accepted == k) sp->k = sp->k * 2 < sp->o.max_draft ? sp->k * 2 : sp->o.max_draft;
    else sp->k = accepted + 1;
    if (accepted) sp->pause = 0;
    else sp->pause = sp->pause ? (sp->pause * 2 < MAX_PAUSE ? sp->pause * 2 : MAX_PAUSE) : 1;
    sp->wait = sp->pause;
}

/* ---- verification ------------------------------------------------------------ */

/* One generation in progress: what ml_generate keeps in its loop. */
typedef struct {
    ml_model *m;
    ml_sampler *smp;
    ml_spec *sp;
    const ml_gen_callbacks *cb;
    int steps, *n_pos;
    int token;     /* the last emitted token: fed at the next position */
    int pos0, n;   /* the batch being checked: sp->batch[0..n) at pos0.. */
    int confirmed; /* its drafts the sampler confirmed so far */
    int settled;   /* a row was refused or the batch is used up: later rows are not plain decoding's */
    int done;      /* the generation ended (stop token, should_stop, steps) */
} run;

/* Position pos's logits (in m->s.logits), exactly as ml_generate takes them:
 * sample, then a stop token ends the run; the token is recorded, reported
 * and appended to the context; should_stop or the last step end the run. */
static void take(run *r, int pos) {
    const ml_gen_callbacks *cb = r->cb;
    int next = ml_sample(r->smp, r->m->s.logits);
    if (ml_gen_is_stop(cb, next)) {
        r->done = 1;
        return;
    }
    ml_sampler_accept(r->smp, next);
    if (cb && cb->on_token) cb->on_token(cb->ud, r->token, next);
    r->token = next;
    r->sp->ctx[r->sp->n_ctx++] = next;
    if ((cb && cb->should_stop && cb->should_stop(cb->ud)) || pos + 1 >= r->steps) r->done = 1;
}

/* ml_forward_batch's callback, row by row in order: a row counts while its
 * input is what plain decoding would have fed there (the first row's always
 * is; a draft only once the row before sampled that very token). */
static ml_status check_row(void *ud, int pos, const float *logits, ml_err *err) {
    run *r = ud;
    ml_model *m = r->m;
    (void)err;
    if (r->done || r->settled) return ML_OK;
    int i = pos - r->pos0, vocab = m->cfg.vocab;
    *r->n_pos = pos + 1;
    if (logits != m->s.logits) memcpy(m->s.logits, logits, (size_t)vocab * sizeof *logits);
    if (r->cb && r->cb->on_logits) r->cb->on_logits(r->cb->ud, pos, m->s.logits, vocab);
    take(r, pos);
    if (!r->done && i + 1 < r->n && r->token == r->sp->batch[i + 1]) r->confirmed++;
    else r->settled = 1;
    return ML_OK;
}

ml_status ml_generate_spec(ml_model *m, ml_sampler *smp, ml_spec *sp, const int *prompt, int n_prompt, int steps,
                           const ml_gen_callbacks *cb, int *n_pos, ml_err *err) {
    *n_pos = 0;
    if (steps > sp->max_seq)
        return ml_errf(err, ML_E_ARG, "steps: expected at most the context %d speculation was set up for, got %d",
                       sp->max_seq, steps);
    ml_status s = ml_generate_prompt(m, smp, prompt, n_prompt, steps, cb, n_pos, err);
    if (s) return s;
    memcpy(sp->ctx, prompt, (size_t)n_prompt * sizeof *prompt);
    sp->n_ctx = n_prompt;
    sp->draft_pos = 0;
    sp->k = 1, sp->pause = sp->wait = 0; /* the first draft is one token: a miss costs little */
    run r = {.m = m, .smp = smp, .sp = sp, .cb = cb, .steps = steps, .n_pos = n_pos, .token = prompt[n_prompt - 1]};
    /* The last prompt position's logits are sampled as ml_generate does. */
    take(&r, n_prompt - 1);
    /* Then batches from position pos: the last token and up to sp->k drafts,
     * never past the last step (a draft at position steps - 1 is the last
     * one plain decoding would run). */
    for (int pos = n_prompt; !r.done;) {
        int room = steps - 1 - pos, k = sp->k < room ? sp->k : room, n_draft = 0;
        if (sp->wait > 0) sp->wait--, k = 0;
        if ((s = propose(sp, k, sp->batch + 1, &n_draft, err))) return s;
        sp->batch[0] = r.token;
        r.pos0 = pos, r.n = n_draft + 1, r.confirmed = 0, r.settled = 0;
        if ((s = ml_forward_batch(m, sp->batch, r.n, pos, check_row, &r, err))) return s;
        sp->drafted += n_draft;
        sp->accepted += r.confirmed;
        sp->batches++;
        /* The draft model fed drafts 0 .. n_draft-2 after the context: the
         * confirmed ones of them stay valid in its cache. */
        if (sp->o.draft && n_draft > 0)
            sp->draft_pos += r.confirmed < n_draft - 1 ? r.confirmed : n_draft - 1;
        adapt(sp, n_draft, r.confirmed);
        pos += r.confirmed + 1;
    }
    return ML_OK;
}
