#include "app/run_spec.h"

#include <string.h>

#include "app/exit_codes.h"

#define DEFAULT_DRAFT 8 /* --draft-model without --draft */

int ml_run_spec_drafts(const ml_run_opts *o) {
    if (o->lookup) return (int)o->lookup;
    if (o->draft_model) return o->draft ? (int)o->draft : DEFAULT_DRAFT;
    return 0;
}

static int refuse(const char *what, ml_status s, const ml_err *err) {
    fprintf(stderr, "ml_run: %s failed (%s): %s\n", what, ml_status_name(s), err->msg);
    return s == ML_E_ARG ? ML_EXIT_USAGE : ML_EXIT_FAIL;
}

/* --draft-tokenizer against -z's: the same pieces, or the pair is refused. */
static int check_tokenizer(const ml_run_opts *o, const ml_tok *tok) {
    ml_tok dt;
    ml_err err = {{0}};
    ml_status s = ml_tok_load(&dt, o->draft_tokenizer, ml_tok_vocab(tok), &err);
    if (!s) s = ml_spec_check_tokenizers(tok, &dt, &err);
    ml_tok_free(&dt);
    return s ? refuse("checking --draft-tokenizer", s, &err) : ML_EXIT_OK;
}

int ml_run_spec_open(ml_run_spec *rs, const ml_run_opts *o, ml_model *m, const ml_tok *tok) {
    memset(rs, 0, sizeof *rs);
    rs->n_draft = ml_run_spec_drafts(o);
    if (!rs->n_draft) return ML_EXIT_OK;
    ml_err err = {{0}};
    ml_status s;
    ml_spec_opts so = {.max_draft = rs->n_draft};
    if (o->draft_model) {
        /* Its own arena and KV cache, no larger than the model's context. */
        ml_open_opts oo = {.use_mmap = o->use_mmap, .max_seq = m->cfg.max_seq, .n_threads = (int)o->threads,
                           .batch = (int)o->batch};
        if ((s = ml_model_open(&rs->draft, o->draft_model, &oo, &err))) return refuse("loading the draft model", s, &err);
        rs->draft_open = 1;
        so.draft = &rs->draft;
        if (o->draft_tokenizer) {
            int rc = check_tokenizer(o, tok);
            if (rc) return rc;
        }
        const ml_config *d = &rs->draft.cfg;
        fprintf(stderr, "ml_run: draft model dim %d, %d layers, vocab %d, context %d, weights %.2f MiB; up to %d drafts\n",
                d->dim, d->n_layers, d->vocab, d->max_seq, rs->draft.weight_bytes / 1048576.0, rs->n_draft);
    }
    if ((s = ml_spec_init(&rs->sp, m, &so, &err))) return refuse("setting up speculation", s, &err);
    rs->sp_open = 1;
    return ML_EXIT_OK;
}

void ml_run_spec_close(ml_run_spec *rs) {
    if (rs->sp_open) ml_spec_free(&rs->sp);
    if (rs->draft_open) ml_model_close(&rs->draft);
    rs->sp_open = rs->draft_open = 0;
}

void ml_run_spec_report(const ml_run_spec *rs, FILE *f) {
    const ml_spec *sp = &rs->sp;
    fprintf(f, "ml_run: %s: drafted %ld, accepted %ld (%.1f%%), %ld model steps\n",
            rs->draft_open ? "--draft-model" : "--lookup", sp->drafted, sp->accepted,
            sp->drafted ? 100.0 * (double)sp->accepted / (double)sp->drafted : 0.0, sp->batches);
}
