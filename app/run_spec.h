/* ml_run's speculative decoding (--lookup N, --draft-model FILE [--draft N]
 * [--draft-tokenizer FILE]): the draft model opened beside the model, the
 * checks of the pair, and the report line. The decoding itself is the
 * library's (lml_model_speculate, over model/speculate.h); the text is plain
 * decoding's. */
#ifndef ML_RUN_SPEC_H
#define ML_RUN_SPEC_H

#include <stdio.h>

#include "app/cli.h"
#include "include/legacy_ml.h"

typedef struct {
    int n_draft;        /* drafts per batch at most; 0: speculation off */
    lml_model *draft;   /* --draft-model, or NULL */
    const lml_model *m; /* the model speculating */
} ml_run_spec;

/* The drafts per batch the options ask for (0: no speculation). The model
 * must then be opened with all_logits and a batch of at least this + 1. */
int ml_run_spec_drafts(const ml_run_opts *o);

/* After the model m and its tokenizer are loaded: open the draft model
 * (with --draft-tokenizer), check the pair, set m's speculation. Prints why
 * not; returns ML_EXIT_OK, ML_EXIT_USAGE (a pair that does not fit) or
 * ML_EXIT_FAIL (a file that does not load). rs is closable either way. */
int ml_run_spec_open(ml_run_spec *rs, const ml_run_opts *o, lml_model *m);
void ml_run_spec_close(ml_run_spec *rs);

/* "drafted D, accepted A (P%), B batches" for the timing line. */
void ml_run_spec_report(const ml_run_spec *rs, FILE *f);

#endif
