/* include/legacy_ml.h's lml_sampler over model/sampler.c: lml_generate's
 * sampler (ml_api_sampler_init) in a handle of its own. lml_sampler_open
 * allocates (the handle, the scratch, a copy of the logits, which
 * ml_sample overwrites); sampling does not. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

struct lml_sampler {
    ml_sampler s;
    float *logits; /* (vocab) ml_sample's working copy */
    void *scratch; /* ml_sampler_scratch_bytes(vocab, context) */
};

lml_status lml_sampler_open(lml_sampler **out, const lml_model *m, const lml_sampler_options *opts,
                            lml_error *err) {
    if (out) *out = NULL;
    if (!out || !m) return ml_api_fail(err, ML_E_ARG, "sampler: expected a place for the handle and a model, got NULL");
    const ml_config *c = &m->m.cfg;
    lml_sampler *h = calloc(1, sizeof *h);
    if (h) {
        h->logits = malloc(sizeof *h->logits * (size_t)c->vocab);
        h->scratch = malloc(ml_sampler_scratch_bytes(c->vocab, c->max_seq));
    }
    if (!h || !h->logits || !h->scratch) {
        lml_sampler_close(h);
        return ml_api_fail(err, ML_E_NOMEM, "sampler: out of memory");
    }
    lml_status s = ml_api_sampler_init(&h->s, &m->m, opts, h->scratch, err);
    if (s) {
        lml_sampler_close(h);
        return s;
    }
    *out = h;
    return LML_OK;
}

void lml_sampler_close(lml_sampler *s) {
    if (!s) return;
    free(s->logits);
    free(s->scratch);
    free(s);
}

void lml_sampler_accept(lml_sampler *s, int token) {
    if (s) ml_sampler_accept(&s->s, token);
}

int lml_sample(lml_sampler *s, const float *logits) {
    if (!s || !logits) return -1;
    memcpy(s->logits, logits, sizeof *s->logits * (size_t)s->s.vocab);
    return ml_sample(&s->s, s->logits);
}
