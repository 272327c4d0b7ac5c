#include "app/cli.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(_WIN32)
#include <windows.h>
#endif

#include "app/exit_codes.h"
#include "core/outfile.h"
#include "core/status.h"
#include "config/ml_config.h"
#include "core/threads.h"
#include "model/gguf_mlb.h"

const char *ml_cli_unalias(const char *a, const ml_cli_alias *t, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(a, t[i].alias)) return t[i].name;
    return a;
}

int ml_cli_int(const char *s, long lo, long hi, long *out) {
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int ml_cli_float(const char *s, double lo, double hi, double *out) {
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int ml_cli_u64(const char *s, unsigned long long *out) {
    /* strtoull skips blanks and accepts a sign, negating the value: " -1"
     * would become 2^64 - 1. Only digits are a non-negative integer. */
    if (!s || *s < '0' || *s > '9') return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return 0;
    *out = v;
    return 1;
}

/* Seconds on a monotonic clock (Windows has no clock_gettime in its C library). */
double ml_cli_now(void) {
#if defined(_WIN32)
    LARGE_INTEGER t, f;
    QueryPerformanceCounter(&t);
    QueryPerformanceFrequency(&f);
    return (double)t.QuadPart / (double)f.QuadPart;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#endif
}

/* ---- ml_run's options ------------------------------------------------------ */

static int usage_error(char *msg, size_t n, const char *fmt, ...) ML_PRINTF(3, 4);
static int usage_error(char *msg, size_t n, const char *fmt, ...) {
    if (msg && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, n, fmt, ap);
        va_end(ap);
    }
    return ML_EXIT_USAGE;
}

/* Options that take a value; anything else starting with '-' is unknown. */
static int takes_value(const char *a) {
    static const char *const names[] = {"-m", "-z", "-i", "-n", "--temp", "-T", "--top-p", "-p",
                                        "-s", "-t", "-c", "-b", "--logits", "--ids"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(a, names[i])) return 1;
    return 0;
}

/* The sampler's filters, -f and --stop, parsed apart from the options above.
 * extra_opt: 1 if `a` is one of them (each takes a value). */
static int extra_opt(const char *a) {
    static const char *const names[] = {"--top-k", "--min-p", "--repeat-penalty", "--repeat-last-n", "-f",
                                        "--stop", "--lookup", "--draft-model", "--draft", "--draft-tokenizer"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(a, names[i])) return 1;
    return 0;
}

/* Returns ML_CLI_RUN, or ML_EXIT_USAGE with the reason in msg. */
static int parse_extra(const char *a, const char *v, ml_run_opts *o, char *msg, size_t msg_size) {
    long n;
    double f;
    if (!strcmp(a, "-f")) {
        o->prompt_file = v;
    } else if (!strcmp(a, "--stop")) {
        size_t max = sizeof o->stops / sizeof *o->stops;
        if (!*v || strlen(v) > ML_STOP_MAX_LEN)
            return usage_error(msg, msg_size, "--stop: expected a string of 1 to %d bytes, got %zu",
                               ML_STOP_MAX_LEN, strlen(v));
        if ((size_t)o->n_stops >= max) return usage_error(msg, msg_size, "--stop: at most %zu of them", max);
        o->stops[o->n_stops++] = v;
    } else if (!strcmp(a, "--lookup") || !strcmp(a, "--draft")) {
        if (!ml_cli_int(v, 1, ML_CLI_MAX_DRAFT, &n))
            return usage_error(msg, msg_size, "%s: expected a draft length in 1..%d tokens, got '%s'", a,
                               ML_CLI_MAX_DRAFT, v);
        if (!strcmp(a, "--lookup")) o->lookup = n;
        else o->draft = n;
    } else if (!strcmp(a, "--draft-model")) {
        o->draft_model = v;
    } else if (!strcmp(a, "--draft-tokenizer")) {
        o->draft_tokenizer = v;
    } else if (!strcmp(a, "--top-k")) {
        if (!ml_cli_int(v, 0, 1L << 30, &n))
            return usage_error(msg, msg_size, "--top-k: expected an integer >= 0 (0 = off), got '%s'", v);
        o->top_k = n;
    } else if (!strcmp(a, "--min-p")) {
        if (!ml_cli_float(v, 0.0, 1.0, &f))
            return usage_error(msg, msg_size, "--min-p: expected a number in [0, 1] (0 = off), got '%s'", v);
        o->min_p = f;
    } else if (!strcmp(a, "--repeat-penalty")) {
        if (!ml_cli_float(v, 0.0, 1e6, &f) || !((float)f > 0.0f)) /* a float, as the sampler takes it */
            return usage_error(msg, msg_size, "--repeat-penalty: expected a number > 0 (1 = off), got '%s'", v);
        o->repeat_penalty = f;
    } else { /* --repeat-last-n */
        if (!ml_cli_int(v, -1, 1L << 30, &n))
            return usage_error(msg, msg_size,
                               "--repeat-last-n: expected an integer >= -1 (0 = off, -1 = the context), got '%s'", v);
        o->repeat_last_n = n;
    }
    return ML_CLI_RUN;
}

int ml_run_parse_args(int argc, char **argv, ml_run_opts *o, char *msg, size_t msg_size) {
    *o = (ml_run_opts){.prompt = "", .steps = -1, .temperature = 1.0, .topp = 0.9, .threads = ml_threads_default(),
                       .batch = ML_RUN_DEFAULT_BATCH, .use_mmap = ML_FILE_AUTO};
    o->repeat_penalty = 1.0;
    o->repeat_last_n = 64;
    if (msg && msg_size) msg[0] = 0;
    static const ml_cli_alias aliases[] = {{"--model", "-m"},  {"--prompt", "-i"},     {"--file", "-f"},
                                           {"--seed", "-s"},   {"--threads", "-t"},    {"--ctx-size", "-c"},
                                           {"--batch-size", "-b"}};
    for (int i = 1; i < argc; i++) {
        const char *a = ml_cli_unalias(argv[i], aliases, sizeof aliases / sizeof *aliases);
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return ML_EXIT_OK;
        if (!strcmp(a, "--no-mmap") || !strcmp(a, "--mmap")) {
            o->use_mmap = !strcmp(a, "--mmap");
            continue;
        }
        if (a[0] != '-')
            return usage_error(msg, msg_size, "unexpected argument '%s' (options only: the model is -m FILE, the "
                               "prompt -i TEXT)", a);
        if (!strcmp(a, "--n-predict") || !strcmp(a, "--predict"))
            return usage_error(msg, msg_size, "unknown option '%s' (-n N: tokens to run, the prompt's included)", a);
        if (!takes_value(a) && !extra_opt(a)) return usage_error(msg, msg_size, "unknown option '%s'", a);
        if (i + 1 >= argc) return usage_error(msg, msg_size, "option %s needs a value", a);
        const char *v = argv[++i];
        if (extra_opt(a)) {
            int rc = parse_extra(a, v, o, msg, msg_size);
            if (rc != ML_CLI_RUN) return rc;
            continue;
        }
        long n;
        double f;
        if (!strcmp(a, "-m")) o->model = v;
        else if (!strcmp(a, "-z")) o->tokenizer = v;
        else if (!strcmp(a, "-i")) o->prompt = v;
        else if (!strcmp(a, "--logits")) o->logits_path = v;
        else if (!strcmp(a, "--ids")) o->ids_path = v;
        else if (!strcmp(a, "-n")) {
            if (!ml_cli_int(v, 0, ML_CLI_MAX_CONTEXT, &n))
                return usage_error(msg, msg_size, "-n: expected a token count in 0..%ld, got '%s'",
                                   ML_CLI_MAX_CONTEXT, v);
            o->steps = n;
        } else if (!strcmp(a, "--temp") || !strcmp(a, "-T")) {
            if (!ml_cli_float(v, 0.0, 1e6, &f))
                return usage_error(msg, msg_size, "%s: expected a number >= 0, got '%s'", a, v);
            o->temperature = f;
        } else if (!strcmp(a, "--top-p") || !strcmp(a, "-p")) {
            if (!ml_cli_float(v, 0.0, 1.0, &f))
                return usage_error(msg, msg_size, "%s: expected a number in [0, 1], got '%s'%s", a, v,
                                   strcmp(a, "-p") ? "" : " (-p is top-p, as in llama2.c; the prompt is -i TEXT)");
            o->topp = f > 0.0 && f < FLT_MIN ? FLT_MIN : f; /* not 0 (off) by rounding to a float */
        } else if (!strcmp(a, "-s")) {
            if (!ml_cli_u64(v, &o->seed))
                return usage_error(msg, msg_size, "-s: expected an integer >= 0, got '%s'", v);
        } else if (!strcmp(a, "-t")) {
            if (!ml_cli_int(v, 1, 256, &n))
                return usage_error(msg, msg_size, "-t: expected a thread count in 1..256, got '%s'", v);
            if (n > 1 && !ML_HAS_THREADS)
                return usage_error(msg, msg_size, "-t %ld: this " ML_ISA_NAME " build has no thread pool (made with THREADS=1): "
                                   "use -t 1, or a build made without THREADS=1", n);
            o->threads = n;
        } else if (!strcmp(a, "-b")) {
            if (!ml_cli_int(v, 1, ML_CLI_MAX_BATCH, &n))
                return usage_error(msg, msg_size, "-b: expected a prompt batch size in 1..%ld, got '%s'",
                                   ML_CLI_MAX_BATCH, v);
            o->batch = n;
        } else { /* -c */
            if (!ml_cli_int(v, 0, ML_CLI_MAX_CONTEXT, &n))
                return usage_error(msg, msg_size,
                                   "-c: expected a context length in 1..%ld or 0 (the model's), got '%s'",
                                   ML_CLI_MAX_CONTEXT, v);
            o->context = ml_cli_context(n);
        }
    }
    if (!o->model) return usage_error(msg, msg_size, "missing -m model.mlb");
    /* no -z: the model's embedded tokenizer (.mlb version 2), checked by ml_run at load */
    if (o->prompt_file && *o->prompt) return usage_error(msg, msg_size, "-i and -f: give the prompt one way");
    if ((o->draft || o->draft_tokenizer) && !o->draft_model)
        return usage_error(msg, msg_size, "%s: needs --draft-model FILE", o->draft ? "--draft" : "--draft-tokenizer");
    if (o->lookup && o->draft_model)
        return usage_error(msg, msg_size, "--lookup and --draft-model: choose one drafter");
    return ML_CLI_RUN;
}

/* ---- -m FILE.gguf: the cached .mlb (model/gguf_mlb.h) --------------------- */

static void say_converting(void *prog, const char *gguf, const char *mlb) {
    fprintf(stderr, "%s: converting %s into the cache %s (once; ML_CACHE_DIR sets the folder)\n", (const char *)prog,
            gguf, mlb);
}

const char *ml_cli_model_path(const char *prog, const char *model, char *buf, size_t cap) {
    if (!model || !ml_gguf_is_file(model)) return model;
    ml_err err = {{0}};
    ml_status s = ml_gguf_cached(model, buf, cap, say_converting, (void *)prog, &err);
    if (!s) return buf;
    fprintf(stderr, "%s: running the GGUF file %s failed (%s): %s\n", prog, model, ml_status_name(s), err.msg);
    return NULL;
}

/* The signals that end a run while it writes: Ctrl-C, kill, a closed
 * terminal, Ctrl-\, the text piped into a reader that has stopped (`| head`),
 * a file size limit (ulimit -f). */
static const int fatal_sigs[] = {
    SIGINT, SIGTERM,
#ifdef SIGHUP
    SIGHUP,
#endif
#ifdef SIGQUIT
    SIGQUIT,
#endif
#ifdef SIGPIPE
    SIGPIPE,
#endif
#ifdef SIGXFSZ
    SIGXFSZ,
#endif
};

/* Remove the temporaries, then die of the signal as without the handler:
 * its default action, unblocked (a handler runs with it blocked); where
 * that does not end the process (PID 1 in a container ignores it), exit
 * with the shell's code for it. */
static void on_fatal_signal(int sig) {
    ml_outfile_remove_temporaries();
    signal(sig, SIG_DFL);
#if !defined(_WIN32)
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
#endif
    raise(sig);
    _Exit(128 + sig);
}

void ml_cli_clean_on_signal(void) {
    for (size_t i = 0; i < sizeof fatal_sigs / sizeof *fatal_sigs; i++) {
#if defined(_WIN32)
        if (signal(fatal_sigs[i], on_fatal_signal) == SIG_IGN) signal(fatal_sigs[i], SIG_IGN);
#else
        /* sigaction: no reset to the default, no restart questions; the
         * others blocked meanwhile, so a second signal cannot cut the
         * removal short */
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        for (size_t k = 0; k < sizeof fatal_sigs / sizeof *fatal_sigs; k++) sigaddset(&sa.sa_mask, fatal_sigs[k]);
        if (sigaction(fatal_sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(fatal_sigs[i], &sa, NULL);
#endif
    }
}
