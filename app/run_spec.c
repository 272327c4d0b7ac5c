#include "app/run_spec.h"

#include <string.h>

#include "app/exit_codes.h"
#include "core/status.h"

#define DEFAULT_DRAFT 8 /* --draft-model without --draft */

int ml_run_spec_drafts(const ml_run_opts *o) {
    if (o->lookup) return (int)o->lookup;
    if (o->draft_model) return o->draft ? (int)o->draft : DEFAULT_DRAFT;
    return 0;
}

/* The library's statuses are model/'s (the names ml_run prints). */
static int refuse(const char *what, lml_status s, const lml_error *err) {
    fprintf(stderr, "ml_run: %s failed (%s): %s\n", what, ml_status_name((ml_status)s), err->message);
    return s == LML_E_ARG ? ML_EXIT_USAGE : ML_EXIT_FAIL;
}

int ml_run_spec_open(ml_run_spec *rs, const ml_run_opts *o, lml_model *m) {
    memset(rs, 0, sizeof *rs);
    rs->m = m;
    rs->n_draft = ml_run_spec_drafts(o);
    if (!rs->n_draft) return ML_EXIT_OK;
    lml_error err = {{0}};
    lml_status s;
    if (o->draft_model) {
        /* Its own arena and KV cache, no larger than the model's context; its
         * tokenizer only when --draft-tokenizer names one (checked against -z's). */
        lml_model_info mi;
        lml_model_get_info(m, &mi);
        lml_model_options oo = {.load = ml_cli_load_mode(o->use_mmap), .context = mi.context, .threads = (int)o->threads,
                                .batch = (int)o->batch, .no_tokenizer = 1};
        if ((s = lml_model_open(&rs->draft, o->draft_model, &oo, &err)))
            return refuse("loading the draft model", s, &err);
        if (o->draft_tokenizer && (s = lml_model_load_tokenizer(rs->draft, o->draft_tokenizer, &err)))
            return refuse("checking --draft-tokenizer", s, &err);
        lml_model_info d;
        lml_model_get_info(rs->draft, &d);
        fprintf(stderr, "ml_run: draft model dim %d, %d layers, vocab %d, context %d, weights %.2f MiB; up to %d drafts\n",
                d.dim, d.n_layers, d.vocab, d.context, d.weight_bytes / 1048576.0, rs->n_draft);
    }
    if ((s = lml_model_speculate(m, rs->n_draft, rs->draft, &err)))
        return refuse(!strncmp(err.message, "draft tokenizer", 15) ? "checking --draft-tokenizer"
                                                                               : "setting up speculation",
                      s, &err);
    return ML_EXIT_OK;
}

void ml_run_spec_close(ml_run_spec *rs) {
    lml_error err;
    if (rs->n_draft && rs->m) lml_model_speculate((lml_model *)rs->m, 0, NULL, &err);
    lml_model_close(rs->draft);
    rs->draft = NULL;
    rs->n_draft = 0;
}

void ml_run_spec_report(const ml_run_spec *rs, FILE *f) {
    long drafted, accepted, steps;
    lml_speculation_stats(rs->m, &drafted, &accepted, &steps);
    fprintf(f, "ml_run: %s: drafted %ld, accepted %ld (%.1f%%), %ld model steps\n",
            rs->draft ? "--draft-model" : "--lookup", drafted, accepted,
            drafted ? 100.0 * (double)accepted / (double)drafted : 0.0, steps);
}
