/* ml_perplexity: perplexity of a model on a text file, llama-perplexity's
 * way (app/perplexity.h: chunks, second half scored), and with --kl-base the
 * quantization loss against another model's saved logits: mean KL
 * divergence, top-1 agreement, PPL ratio. Prints and exits; the arithmetic
 * and the KL base file format are in app/perplexity.c. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/cli.h"
#include "app/exit_codes.h"
#include "app/perplexity.h"
#include "config/ml_config.h"
#include "core/outfile.h"
#include "core/argmax.h" /* the greedy pick, for the agreement figure */
#include "core/path.h"
#include "core/threads.h" /* ml_threads_default, ML_HAS_THREADS */
#include "include/legacy_ml.h"

#define DEFAULT_CTX 512
#define KL_IO_BUFFER (1u << 20)

typedef struct {
    const char *model, *tokenizer, *text, *kl_path;
    long ctx, batch, threads; /* ctx, batch: 0 when not given */
    int kl_save;
} options;

static void usage(FILE *f) {
    fprintf(f,
            "usage: ml_perplexity -m model.mlb [-z tokenizer.bin] -f text.txt [options]\n"
            "  -m FILE          model, converted by tools/convert.py\n"
            "  -z FILE          llama2.c tokenizer.bin or BPE tokenizer file matching the\n"
            "                   model's vocab (default: the one the model embeds)\n"
            "  -f FILE          UTF-8 text to score\n"
            "  -c N             tokens per chunk, >= 4 (default: the model's context, at most %d)\n"
            "  -b N             positions per evaluation batch (default: -c; 1 = token by\n"
            "                   token). Results are the same bit for bit for every N\n"
            "  -t N             threads (default: the CPUs this process may use, at most 8; 1 in THREADS=1 builds)\n"
            "  --kl-base FILE   if FILE exists: compare with the logits saved in it (mean KL\n"
            "                   divergence, top-1 agreement, PPL ratio); if not: save this\n"
            "                   model's logits there. Same text and -c, a model of the same vocab\n"
            "  --kl-save        with --kl-base: (re)write FILE even if it exists\n"
            "  --version        print the version and the build, and exit\n"
            "scoring (as llama-perplexity): the text is tokenized once (BOS first) and cut\n"
            "into chunks of -c tokens (a partial last chunk is dropped); each chunk starts with\n"
            "BOS (a BPE tokenizer without BOS: neither) and is evaluated from position 0;\n"
            "only its second half is scored: tokens\n"
            "c/2+1 .. c-1 (0-based), each predicted with at least c/2+1 tokens of context.\n"
            "PPL = exp(mean negative log-likelihood), +/- its standard error.\n"
            "build: %s\n",
            DEFAULT_CTX, ML_ISA_NAME);
}

/* ---- options --------------------------------------------------------------- */

static int usage_error(const char *fmt, ...) ML_PRINTF(1, 2);
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ml_perplexity: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n\n");
    usage(stderr);
    return ML_EXIT_USAGE;
}

/* Returns ML_CLI_RUN or an exit code. */
static int parse_args(int argc, char **argv, options *o) {
    static const char *const valued[] = {"-m", "-z", "-f", "-c", "-b", "-t", "--kl-base"};
    *o = (options){.threads = ml_threads_default()};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ML_EXIT_OK;
        }
        if (!strcmp(a, "--kl-save")) {
            o->kl_save = 1;
            continue;
        }
        if (a[0] != '-') return usage_error("unexpected argument '%s'", a);
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof *valued; k++) known |= !strcmp(a, valued[k]);
        if (!known) return usage_error("unknown option '%s'", a);
        if (i + 1 >= argc) return usage_error("option %s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "-m")) o->model = v;
        else if (!strcmp(a, "-z")) o->tokenizer = v;
        else if (!strcmp(a, "-f")) o->text = v;
        else if (!strcmp(a, "--kl-base")) o->kl_path = v;
        else if (!strcmp(a, "-c") && !ml_cli_int(v, 4, ML_CLI_MAX_CONTEXT, &o->ctx))
            return usage_error("-c: expected a chunk size in 4..%ld, got '%s'", ML_CLI_MAX_CONTEXT, v);
        else if (!strcmp(a, "-b") && !ml_cli_int(v, 1, ML_CLI_MAX_CONTEXT, &o->batch))
            return usage_error("-b: expected a batch size in 1..%ld, got '%s'", ML_CLI_MAX_CONTEXT, v);
        else if (!strcmp(a, "-t") && !ml_cli_int(v, 1, 256, &o->threads))
            return usage_error("-t: expected a thread count in 1..256, got '%s'", v);
        else if (!strcmp(a, "-t") && o->threads > 1 && !ML_HAS_THREADS)
            return usage_error("-t %ld: this " ML_ISA_NAME " build has no thread pool (made with THREADS=1): "
                               "use -t 1, or a build made without THREADS=1", o->threads);
    }
    if (!o->model) return usage_error("%s", "missing -m model.mlb");
    if (!o->text) return usage_error("%s", "missing -f text.txt");
    if (o->kl_save && !o->kl_path) return usage_error("%s", "--kl-save needs --kl-base FILE");
    if (o->kl_path && !*o->kl_path) return usage_error("%s", "--kl-base: the file name is empty");
    return ML_CLI_RUN;
}

/* ---- the text ------------------------------------------------------------------ */

/* The whole file, NUL-terminated, into *out (malloc'd). Prints why not. */
static int read_text(const char *path, char **out) {
    *out = NULL;
    FILE *f = ml_fopen(path, "rb");
    ml_stat_t st;
    if (!f || ml_fstat(fileno(f), &st) || !st.is_reg) {
        fprintf(stderr, "ml_perplexity: cannot read the text '%s': %s\n", path,
                f ? "not a regular file" : strerror(errno));
        if (f) fclose(f);
        return 0;
    }
    if (st.size >= SIZE_MAX) { /* a 32-bit build: n would wrap, and read a part */
        fprintf(stderr, "ml_perplexity: the text '%s' is %llu bytes, more than this build can hold\n", path,
                (unsigned long long)st.size);
        fclose(f);
        return 0;
    }
    size_t n = (size_t)st.size;
    char *buf = malloc(n + 1);
    size_t got = buf ? fread(buf, 1, n, f) : 0;
    fclose(f);
    if (!buf || got != n) {
        fprintf(stderr, "ml_perplexity: reading the text '%s' failed (%s)\n", path,
                buf ? "short read" : "out of memory");
        free(buf);
        return 0;
    }
    buf[n] = 0;
    if (n == 0 || memchr(buf, 0, n)) {
        fprintf(stderr, "ml_perplexity: the text '%s' is %s\n", path,
                n ? "not text: it holds a NUL byte" : "empty");
        free(buf);
        return 0;
    }
    *out = buf;
    return 1;
}

/* ---- scoring ----------------------------------------------------------------- */

typedef enum { KL_NONE, KL_SAVE, KL_COMPARE } kl_mode;

typedef struct {
    lml_model *m;
    int vocab;
    const int *tokens;
    ml_ppl_layout l;
    int chunk;           /* the chunk being scored */
    kl_mode mode;
    FILE *kl;            /* KL_SAVE: out.f */
    ml_outfile out;      /* KL_SAVE: the file being written (core/outfile.h) */
    const char *kl_name; /* for messages: the file as the user named it */
    float *base;         /* (vocab) a record of the base, KL_COMPARE */
    ml_mean_acc nll, base_nll, kl_div;
    long agree, scored;
    ml_err err;          /* why score_position stopped the run */
} scorer;

/* Score logits, which predict target; record: the index of this position
 * among all scored ones (the KL base's record). */
static ml_status score(scorer *s, const float *logits, long record, int target, ml_err *err) {
    const int vocab = s->vocab;
    const ml_log_norm z = ml_log_norm_of(logits, vocab);
    ml_mean_add(&s->nll, -ml_log_prob(z, logits[target]));
    s->scored++;
    if (s->mode == KL_SAVE && fwrite(logits, sizeof *logits, (size_t)vocab, s->kl) != (size_t)vocab)
        return ml_errf(err, ML_E_IO, "%s: write failed (disk full?)", s->kl_name);
    if (s->mode == KL_COMPARE) {
        ml_status st = ml_kl_read_row(s->kl, s->base, vocab, record, s->kl_name, err);
        if (st) return st;
        const ml_log_norm zb = ml_log_norm_of(s->base, vocab);
        ml_mean_add(&s->base_nll, -ml_log_prob(zb, s->base[target]));
        ml_mean_add(&s->kl_div, ml_kl_div(s->base, zb, logits, z, vocab));
        s->agree += ml_argmax(s->base, vocab) == ml_argmax(logits, vocab);
    }
    return ML_OK;
}

/* Each position's logits from lml_eval: the second half is scored. A
 * failure (writing or reading the KL base) stops the run, its reason in s->err. */
static int score_position(void *ud, int pos, const float *logits, int vocab) {
    scorer *s = ud;
    const ml_ppl_layout *l = &s->l;
    (void)vocab;
    if (pos < l->first) return ML_OK;
    const int *tok = s->tokens + (long)s->chunk * l->ctx;
    return (int)score(s, logits, (long)s->chunk * l->n_scored + (pos - l->first), tok[pos + 1], &s->err);
}

/* One chunk: positions 0 .. ctx-2 (the last token is only a target), in
 * batches of -b positions (the model was opened with that batch). */
static ml_status run_chunk(scorer *s, int c, ml_err *err) {
    s->chunk = c;
    lml_error e;
    lml_status st = lml_eval(s->m, s->tokens + (long)c * s->l.ctx, s->l.ctx - 1, 0, score_position, s, &e);
    if (st && s->err.msg[0]) *err = s->err;
    else if (st) snprintf(err->msg, sizeof err->msg, "%s", e.message);
    return (ml_status)st;
}

static double ppl_of(const ml_mean_acc *nll) { return exp(ml_mean(nll)); }

/* ---- main ---------------------------------------------------------------------- */

static int fail(const char *what, ml_status s, const ml_err *err) {
    fprintf(stderr, "ml_perplexity: %s failed (%s): %s\n", what, ml_status_name(s), err->msg);
    return ML_EXIT_FAIL;
}

/* The library's statuses are model/'s: the same names. */
static int fail_api(const char *what, lml_status s, const lml_error *err) {
    fprintf(stderr, "ml_perplexity: %s failed (%s): %s\n", what, ml_status_name((ml_status)s), err->message);
    return ML_EXIT_FAIL;
}

/* Open the KL base: a temporary beside the target to write (renamed over it
 * on success; never one of the run's inputs), or the existing file to read,
 * with our own stdio buffer (no allocation inside the scoring loop). Prints
 * why not. */
static int open_kl(scorer *s, const options *o, void *iobuf, const ml_kl_header *h) {
    ml_err err = {{0}};
    ml_status st;
    ml_stat_t sb; /* a UTF-8 name, a file over 2 GiB: seen, never taken for a new one */
    int exists = ml_stat(o->kl_path, &sb) == 0;
    s->mode = o->kl_save || !exists ? KL_SAVE : KL_COMPARE;
    s->kl_name = o->kl_path;
    if (s->mode == KL_COMPARE && !sb.is_reg) {
        fprintf(stderr, "ml_perplexity: --kl-base '%s' is not a regular file (--kl-save writes to a device or pipe)\n",
                o->kl_path);
        return 0;
    }
    if (s->mode == KL_SAVE) {
        if ((st = ml_outfile_open(&s->out, "--kl-base", o->kl_path, &err))) {
            fprintf(stderr, "ml_perplexity: %s\n", err.msg);
            return 0;
        }
        s->kl = s->out.f;
    } else if (!(s->kl = ml_fopen(o->kl_path, "rb"))) {
        fprintf(stderr, "ml_perplexity: cannot read '%s': %s\n", o->kl_path, strerror(errno));
        return 0;
    }
    setvbuf(s->kl, iobuf, _IOFBF, KL_IO_BUFFER);
    st = s->mode == KL_SAVE ? ml_kl_write_header(s->kl, h, o->kl_path, &err)
                            : ml_kl_read_header(s->kl, h, o->kl_path, &err);
    if (st) {
        fail(s->mode == KL_SAVE ? "writing the KL base" : "reading the KL base", st, &err);
        return 0;
    }
    printf("KL base: %s '%s'%s\n", s->mode == KL_SAVE ? "saving this model's logits to" : "comparing with",
           o->kl_path, s->mode == KL_SAVE ? (s->out.replaces ? " (--kl-save: replacing it)" : exists ? "" : " (it did not exist)") : "");
    return 1;
}

static void print_kl(const scorer *s) {
    double ppl = ppl_of(&s->nll), base = ppl_of(&s->base_nll);
    printf("KL base PPL = %.4f +/- %.4f\n", base, base * ml_mean_stderr(&s->base_nll));
    printf("mean KL divergence (base || this) = %.6f +/- %.6f\n", ml_mean(&s->kl_div), ml_mean_stderr(&s->kl_div));
    printf("top-1 agreement = %.2f%% (%ld of %ld positions)\n", 100.0 * (double)s->agree / (double)s->scored,
           s->agree, s->scored);
    printf("PPL ratio (this / base) = %.4f (ln %.6f)\n", ppl / base, log(ppl / base));
}

int ml_main(int argc, char **argv) {
    ml_cli_clean_on_signal();
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc != ML_CLI_RUN) return rc;
    /* --kl-base is checked against the inputs before a GGUF converts, and
     * again against what it converted to. */
    const char *model_arg = o.model;
    char gguf_mlb[4096]; /* -m X.gguf: its cached .mlb */
    ml_err err = {{0}};
    ml_named_path inputs[] = {
        {"the model -m", o.model}, {"the GGUF's converted model", NULL}, {"the tokenizer -z", o.tokenizer}, {"the text -f", o.text}};
    if (o.kl_path && ml_outfile_check("--kl-base", o.kl_path, inputs, 4, &err)) {
        fprintf(stderr, "ml_perplexity: %s\n", err.msg);
        return ML_EXIT_USAGE;
    }
    if (!(o.model = ml_cli_model_path("ml_perplexity", o.model, gguf_mlb, sizeof gguf_mlb))) return ML_EXIT_FAIL;
    inputs[1].path = o.model != model_arg ? o.model : NULL;
    if (o.kl_path && ml_outfile_check("--kl-base", o.kl_path, inputs, 4, &err)) {
        fprintf(stderr, "ml_perplexity: %s\n", err.msg);
        return ML_EXIT_USAGE;
    }

    lml_error lerr;
    lml_model *m;
    lml_status lst;
    ml_status st;
    /* Every position's logits, -b at a time (a batch above the context is capped at it). */
    lml_model_options oo = {.context = (int)(o.ctx ? o.ctx : DEFAULT_CTX), .threads = (int)o.threads,
                            .batch = o.batch ? (int)o.batch : INT_MAX, .all_logits = 1,
                            .no_tokenizer = 1};
    if ((lst = lml_model_open(&m, o.model, &oo, &lerr))) return fail_api("loading the model", lst, &lerr);
    if ((lst = lml_model_load_tokenizer(m, o.tokenizer, &lerr))) { /* NULL: the embedded one */
        lml_model_close(m);
        return fail_api("loading the tokenizer", lst, &lerr);
    }
    lml_model_info info;
    lml_model_get_info(m, &info); /* the tokenizer's too */
    char *text = NULL;
    int *tokens = NULL;
    void *iobuf = NULL;
    scorer s = {.m = m, .vocab = info.vocab};
    rc = ML_EXIT_FAIL;
    if (o.ctx > info.context) {
        fprintf(stderr, "ml_perplexity: -c %ld exceeds the model's context of %d tokens\n", o.ctx, info.context);
        rc = ML_EXIT_USAGE;
        goto done;
    }
    if (!read_text(o.text, &text)) goto done;
    size_t cap = lml_tokenize_capacity(text);
    tokens = malloc(cap * sizeof *tokens);
    int n_tokens = 0;
    if (!tokens) {
        fprintf(stderr, "ml_perplexity: out of memory for the tokens\n");
        goto done;
    }
    if ((lst = lml_tokenize(m, text, info.add_bos, tokens, cap, &n_tokens, &lerr))) {
        rc = fail_api("tokenizing the text", lst, &lerr);
        goto done;
    }
    s.tokens = tokens;
    s.l = ml_ppl_layout_of(n_tokens, info.context);
    if (s.l.n_chunks == 0) {
        fprintf(stderr, "ml_perplexity: the text '%s' is %d tokens, fewer than one chunk of %d (use a smaller -c)\n",
                o.text, n_tokens, s.l.ctx);
        goto done;
    }
    if (info.add_bos) /* a tokenizer without BOS (Qwen's) leaves each chunk's first token as it is */
        for (int c = 0; c < s.l.n_chunks; c++) tokens[(long)c * s.l.ctx] = info.bos;

    if (o.kl_path) {
        ml_kl_header h = {(uint32_t)info.vocab, (uint32_t)s.l.ctx, (uint32_t)s.l.n_chunks, (uint32_t)s.l.n_scored,
                          ml_tokens_hash(tokens, (long)s.l.n_chunks * s.l.ctx)};
        iobuf = malloc(KL_IO_BUFFER);
        s.base = malloc((size_t)info.vocab * sizeof *s.base);
        if (!iobuf || !s.base) {
            fprintf(stderr, "ml_perplexity: out of memory for the KL base buffers\n");
            goto done;
        }
        if (!open_kl(&s, &o, iobuf, &h)) goto done;
    }

    const ml_ppl_layout *l = &s.l;
    printf("model: %s (%s, vocab %d), %s build\n", o.model, info.weights,
           info.vocab, ML_ISA_NAME);
    printf("text: %s: %d tokens%s; %d chunk%s of %d (%d tokens after the last chunk unused)\n", o.text,
           n_tokens, info.add_bos ? " (BOS first)" : "", l->n_chunks, l->n_chunks == 1 ? "" : "s", l->ctx,
           n_tokens - l->n_chunks * l->ctx);
    printf("scored: the second half of each chunk, tokens %d..%d (0-based; %d per chunk, %ld in all), "
           "each with at least %d tokens of context\n",
           l->first + 1, l->ctx - 1, l->n_scored, (long)l->n_scored * l->n_chunks, l->first + 1);
    double t0 = ml_cli_now();
    for (int c = 0; c < l->n_chunks; c++) {
        if ((st = run_chunk(&s, c, &err))) {
            rc = fail("scoring", st, &err);
            goto done;
        }
        printf("[%d/%d] PPL %.4f\n", c + 1, l->n_chunks, ppl_of(&s.nll));
        fflush(stdout);
    }
    double dt = ml_cli_now() - t0;
    printf("PPL = %.4f +/- %.4f (%ld scored tokens, %d chunk%s of %d)\n", ppl_of(&s.nll),
           ppl_of(&s.nll) * ml_mean_stderr(&s.nll), s.scored, l->n_chunks, l->n_chunks == 1 ? "" : "s", l->ctx);
    if (s.mode == KL_COMPARE) print_kl(&s);
    if (s.mode == KL_SAVE) {
        s.kl = NULL;
        if ((st = ml_outfile_commit(&s.out, &err))) {
            fprintf(stderr, "ml_perplexity: --kl-base: %s\n", err.msg);
            goto done;
        }
        printf("KL base: saved %ld positions x %d logits to '%s'\n", s.scored, info.vocab, o.kl_path);
    }
    fprintf(stderr, "ml_perplexity: %ld positions evaluated in %.3f s\n",
            (long)l->n_chunks * (l->ctx - 1), dt);
    rc = fflush(stdout) || ferror(stdout) ? ML_EXIT_FAIL : ML_EXIT_OK;
done:
    if (s.mode == KL_SAVE) ml_outfile_abort(&s.out); /* the target keeps its content */
    else if (s.kl) fclose(s.kl);
    free(s.base);
    free(iobuf);
    free(tokens);
    free(text);
    lml_model_close(m);
    return rc;
}
