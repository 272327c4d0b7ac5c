/* The library's handle behind include/legacy_ml.h, shared by api/open.c (the
 * guard: compiled without ISA flags) and api/api.c (everything after it). */
#ifndef ML_API_H
#define ML_API_H

#include "core/status.h"
#include "include/legacy_ml.h"
#include "model/model.h"
#include "model/sampler.h"
#include "model/speculate.h"
#include "model/tok.h"

struct lml_model {
    ml_model m;
    ml_tok tok;
    int has_tok;       /* tok is loaded */
    int tok_from_file; /* ... from options.tokenizer or lml_model_load_tokenizer's path */
    ml_spec sp;        /* lml_model_speculate */
    int has_spec;
    int stop[LML_MAX_STOP_TOKENS]; /* (n_stop) lml_model_set_stop_tokens; n_stop 0: the default */
    int n_stop;
};

/* ml_err -> lml_error (either may be NULL); returns s as an lml_status. */
lml_status ml_api_error(lml_error *out, const ml_err *e, ml_status s);
/* A reason of the API's own (not model/'s) into out; returns s. */
lml_status ml_api_fail(lml_error *out, ml_status s, const char *what);

/* lml_generate's sampler over scratch (ml_sampler_scratch_bytes of m's vocab
 * and context) with opts (NULL: the defaults), checked as the header says. */
lml_status ml_api_sampler_init(ml_sampler *smp, const ml_model *m, const lml_sampler_options *opts, void *scratch,
                               lml_error *err);

/* lml_model_open(_memory) after the CPU check passed: path or (data, size). */
lml_status ml_api_open(lml_model **out, const char *path, const void *data, size_t size,
                       const lml_model_options *opts, lml_error *err);

#endif
