/* Command-line parsing shared by the app/ programs: strict numbers (the
 * whole string must be a number in range, or the caller prints usage and
 * exits), and ml_run's option parser, kept free of I/O so a fuzz target
 * (fuzz/fuzz_cli.c) can call it. */
#ifndef ML_CLI_H
#define ML_CLI_H

#include <stddef.h>

#include "app/run_text.h" /* ML_STOP_MAX, ML_STOP_MAX_LEN */
#include "core/file.h"     /* ML_FILE_AUTO */
#include "include/legacy_ml.h" /* LML_LOAD_* */

/* 1 on success. */
int ml_cli_int(const char *s, long lo, long hi, long *out);
int ml_cli_float(const char *s, double lo, double hi, double *out);
int ml_cli_u64(const char *s, unsigned long long *out);

/* llama.cpp's long name of an option and ours (the same meaning: an alias
 * is listed only where the two agree; llama.cpp's -n counts no prompt). */
typedef struct { const char *alias, *name; } ml_cli_alias;
/* a's own name if t (n entries) lists it as an alias, else a. */
const char *ml_cli_unalias(const char *a, const ml_cli_alias *t, size_t n);

/* Seconds on a monotonic clock. */
double ml_cli_now(void);

/* ---- ml_run's options ---- */
typedef struct {
    const char *model, *tokenizer, *prompt, *logits_path, *ids_path; /* prompt: "" if none */
    long steps;                  /* -n; -1: not given */
    double temperature, topp;    /* --temp in [0, 1e6], --top-p in [0, 1] */
    unsigned long long seed;     /* -s; 0: not given (seed from the clock) */
    long threads;                /* -t in 1..256; default ml_threads_default() */
    long context;                /* lml_model_options.context: 0 without -c (the default cap) */
    long batch;                  /* -b in 1..ML_CLI_MAX_BATCH; default ML_RUN_DEFAULT_BATCH */
    int use_mmap;                /* 0 with --no-mmap, 1 with --mmap; default ML_FILE_AUTO */
    long top_k;                  /* --top-k >= 0; 0: off */
    double min_p;                /* --min-p in [0, 1]; 0: off */
    double repeat_penalty;       /* --repeat-penalty > 0; 1: off */
    long repeat_last_n;          /* --repeat-last-n >= -1 (-1: the context); default 64 */
    const char *prompt_file;     /* -f FILE ("-": stdin); NULL: not given */
    const char *stops[ML_STOP_MAX];        /* --stop STR, (n_stops) of them, in the order given */
    int n_stops;
    long lookup;                 /* --lookup N in 1..ML_CLI_MAX_DRAFT: prompt lookup; 0: off */
    const char *draft_model;     /* --draft-model FILE; NULL: none */
    long draft;                  /* --draft N in 1..ML_CLI_MAX_DRAFT; 0: not given */
    const char *draft_tokenizer; /* --draft-tokenizer FILE; NULL: -z's */
} ml_run_opts;

#define ML_CLI_RUN (-1) /* ml_run_parse_args: go ahead and run */

/* Prompt tokens per batch: ml_run's default (of -b 16, 32, 64, 128, the
 * fastest pp128 on stories110M and TinyLlama, docs/PERF.md: a 128-token
 * prompt in one batch, as llama-bench runs it), and the largest accepted
 * (the loader's largest context; the model caps it at its own). */
#define ML_RUN_DEFAULT_BATCH 128
#define ML_CLI_MAX_BATCH (1L << 20)
/* The largest -c and -n: the loader's largest context (max_seq). */
#define ML_CLI_MAX_CONTEXT (1L << 20)
/* The largest --lookup and --draft (model/speculate.h's ML_SPEC_MAX_DRAFT). */
#define ML_CLI_MAX_DRAFT 64

/* -c N as lml_model_options.context: -c 0 asks for the model's whole context. */
static inline long ml_cli_context(long n) { return n ? n : LML_CONTEXT_MODEL; }

/* Parse ml_run's argv into o. Returns ML_CLI_RUN; ML_EXIT_OK for -h/--help
 * (the caller prints usage); or ML_EXIT_USAGE with the reason in msg (the
 * caller prints it and usage). Never prints, never exits. */
/* ml_run_opts.use_mmap (1, 0 or ML_FILE_AUTO) as the library's load mode. */
static inline int ml_cli_load_mode(int use_mmap) {
    return use_mmap == ML_FILE_AUTO ? LML_LOAD_AUTO : use_mmap ? LML_LOAD_MMAP : LML_LOAD_READ;
}

int ml_run_parse_args(int argc, char **argv, ml_run_opts *o, char *msg, size_t msg_size);

/* The name the programs print for a status: "ML_E_FORMAT" (lml_status_name without its L). */
static inline const char *ml_cli_status_name(lml_status s) { return lml_status_name(s) + 1; }

/* -m FILE.gguf: the path of its .mlb in the cache, converted there on first
 * use (saying so on stderr); any other model path is returned as given.
 * NULL after printing why the GGUF cannot be run. buf holds the path. */
const char *ml_cli_model_path(const char *prog, const char *model, char *buf, size_t cap);

/* On SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE or SIGXFSZ (unless ignored,
 * as SIGINT in a background job), remove the temporaries of the outputs
 * being written (core/outfile.h), then die of the signal as before: an
 * interrupted run or GGUF conversion leaves the targets as they were and no
 * partial file beside them. A program that handles a signal itself (chat,
 * the server) installs its own handler after this one. */
void ml_cli_clean_on_signal(void);

#endif
