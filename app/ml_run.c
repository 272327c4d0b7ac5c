/* ml_run: load a .mlb model and a llama2.c tokenizer, generate text.
 * The only layer (with the other app/ programs) that prints and exits. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/cli.h"
#include "app/exit_codes.h"
#include "config/ml_config.h"
#include "model/generate.h"
#include "model/model.h"
#include "model/sampler.h"
#include "model/tokenizer.h"

#define DEFAULT_STEPS 256

static void usage(FILE *f) {
    fprintf(f,
            "usage: ml_run -m model.mlb -z tokenizer.bin [options]\n"
            "  -m FILE        model, converted by tools/convert.py\n"
            "  -z FILE        llama2.c tokenizer.bin matching the model's vocab\n"
            "  -i TEXT        prompt (default: none, the story starts from BOS)\n"
            "  -n N           tokens to run, prompt included (default %d or the context;\n"
            "                 0 = the whole context)\n"
            "  --temp T       temperature >= 0 (default 1.0; 0 = greedy)\n"
            "  --top-p P      nucleus sampling in [0, 1] (default 0.9; 0 or 1 = off)\n"
            "  -s SEED        random seed (default: from the clock)\n"
            "  -t N           threads (default 1; THREADS=pthread builds)\n"
            "  -c N           cap the context, and so the KV cache, at N tokens\n"
            "  --no-mmap      read the model into memory instead of mapping it\n"
            "  --logits FILE  write each position's logits (float32 x vocab) to FILE\n"
            "  --ids FILE     write the token ids (prompt, then generated), one per line\n"
            "  --cpu-info     print what this CPU supports and which build to use\n"
            "build: %s\n",
            DEFAULT_STEPS, ML_ISA_NAME);
}

static int bad_usage(const char *fmt, const char *arg) {
    fprintf(stderr, "ml_run: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n");
    usage(stderr);
    return ML_EXIT_USAGE;
}

static int fail(const char *what, ml_status s, const ml_err *err) {
    fprintf(stderr, "ml_run: %s failed (%s): %s\n", what, ml_status_name(s), err->msg);
    return ML_EXIT_FAIL;
}

typedef struct {
    const char *model, *tokenizer, *prompt, *logits_path, *ids_path;
    long steps;         /* -1: default */
    double temperature, topp;
    unsigned long long seed;
    long threads, context;
    int use_mmap;
} options;

/* Parse argv into o; returns -1 on success or an exit code. */
static int parse_args(int argc, char **argv, options *o) {
    *o = (options){.prompt = "", .steps = -1, .temperature = 1.0, .topp = 0.9, .threads = 1,
                   .use_mmap = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ML_EXIT_OK;
        }
        if (!strcmp(a, "--no-mmap")) {
            o->use_mmap = 0;
            continue;
        }
        if (a[0] != '-' ) return bad_usage("unexpected argument '%s'", a);
        if (i + 1 >= argc) return bad_usage("option %s needs a value", a);
        const char *v = argv[++i];
        long n;
        double f;
        if (!strcmp(a, "-m")) o->model = v;
        else if (!strcmp(a, "-z")) o->tokenizer = v;
        else if (!strcmp(a, "-i")) o->prompt = v;
        else if (!strcmp(a, "--logits")) o->logits_path = v;
        else if (!strcmp(a, "--ids")) o->ids_path = v;
        else if (!strcmp(a, "-n")) {
            if (!ml_cli_int(v, 0, 1L << 30, &n)) return bad_usage("-n: expected an integer >= 0, got '%s'", v);
            o->steps = n;
        } else if (!strcmp(a, "--temp") || !strcmp(a, "-T")) {
            if (!ml_cli_float(v, 0.0, 1e6, &f)) return bad_usage("--temp: expected a number >= 0, got '%s'", v);
            o->temperature = f;
        } else if (!strcmp(a, "--top-p") || !strcmp(a, "-p")) {
            if (!ml_cli_float(v, 0.0, 1.0, &f)) return bad_usage("--top-p: expected a number in [0, 1], got '%s'", v);
            o->topp = f;
        } else if (!strcmp(a, "-s")) {
            if (!ml_cli_u64(v, &o->seed)) return bad_usage("-s: expected an integer >= 0, got '%s'", v);
        } else if (!strcmp(a, "-t")) {
            if (!ml_cli_int(v, 1, 256, &n)) return bad_usage("-t: expected a thread count in 1..256, got '%s'", v);
            o->threads = n;
        } else if (!strcmp(a, "-c")) {
            if (!ml_cli_int(v, 1, 1L << 30, &n)) return bad_usage("-c: expected a context length >= 1, got '%s'", v);
            o->context = n;
        } else {
            return bad_usage("unknown option '%s'", a);
        }
    }
    if (!o->model) return bad_usage("%s", "missing -m model.mlb");
    if (!o->tokenizer) return bad_usage("%s", "missing -z tokenizer.bin");
    return -1;
}

/* ---- output ------------------------------------------------------------ */

typedef struct {
    const ml_tokenizer *tok;
    FILE *logits, *ids;
    int io_error;
} run_ctx;

/* Print a piece, dropping raw control bytes (a byte-fallback token can be
 * any byte) but keeping whitespace and UTF-8 sequences intact. */
static void print_piece(const char *p, size_t len) {
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 || c == '\n' || c == '\t' || c == '\r') putchar(c);
    }
    fflush(stdout);
}

static void on_token(void *ud, int prev, int token) {
    run_ctx *r = ud;
    size_t len = 0;
    const char *piece = ml_tokenizer_decode(r->tok, prev, token, &len);
    if (piece) print_piece(piece, len);
    if (r->ids && fprintf(r->ids, "%d\n", token) < 0) r->io_error = 1;
}

static void on_logits(void *ud, int pos, const float *logits, int vocab) {
    run_ctx *r = ud;
    (void)pos;
    if (r->logits && fwrite(logits, sizeof *logits, (size_t)vocab, r->logits) != (size_t)vocab)
        r->io_error = 1;
}

static FILE *open_out(const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) fprintf(stderr, "ml_run: cannot write '%s'\n", path);
    return f;
}

/* ---- main -------------------------------------------------------------- */

int ml_main(int argc, char **argv) {
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) return rc;

    ml_err err = {{0}};
    ml_model m;
    ml_tokenizer tok;
    ml_status s;
    double t0 = ml_cli_now();
    ml_open_opts oo = {.use_mmap = o.use_mmap, .max_seq = (int)o.context, .n_threads = (int)o.threads};
    if ((s = ml_model_open(&m, o.model, &oo, &err))) return fail("loading the model", s, &err);
    const ml_config *c = &m.cfg;
    if ((s = ml_tokenizer_load(&tok, o.tokenizer, c->vocab, &err))) {
        ml_model_close(&m);
        return fail("loading the tokenizer", s, &err);
    }
    double t_load = ml_cli_now() - t0;
    fprintf(stderr,
            "ml_run: %s build; model dim %d, %d layers, %d/%d heads, hidden %d, vocab %d, context %d, %s\n"
            "ml_run: weights %.2f MiB %s, arena %.2f MiB (KV cache %.2f MiB); loaded in %.1f ms\n",
            ML_ISA_NAME, c->dim, c->n_layers, c->n_heads, c->n_kv_heads, c->hidden_dim, c->vocab,
            c->max_seq, c->wtype == ML_TYPE_Q8_0 ? "Q8_0" : "Q4_0", m.weight_bytes / 1048576.0,
            m.file.mapped ? "mapped" : "read into memory", m.arena.cap / 1048576.0,
            m.kv_bytes / 1048576.0, t_load * 1e3);

    /* Steps: explicit values must fit the context; the default shrinks to it. */
    int steps = o.steps < 0 ? (DEFAULT_STEPS < c->max_seq ? DEFAULT_STEPS : c->max_seq)
                : o.steps == 0 ? c->max_seq : (int)o.steps;
    int *prompt = NULL;
    FILE *flog = NULL, *fids = NULL;
    rc = ML_EXIT_FAIL;
    if (o.steps > c->max_seq) {
        fprintf(stderr, "ml_run: -n %ld exceeds the context of %d tokens (use -n 0 for all of it)\n",
                o.steps, c->max_seq);
        rc = ML_EXIT_USAGE;
        goto done;
    }
    prompt = malloc(ml_tokenizer_max_tokens(o.prompt) * sizeof *prompt);
    if (!prompt) {
        fprintf(stderr, "ml_run: out of memory for the prompt\n");
        goto done;
    }
    int n_prompt = 0;
    if ((s = ml_tokenizer_encode(&tok, o.prompt, 1, 0, prompt, &n_prompt, &err))) {
        rc = fail("encoding the prompt", s, &err);
        goto done;
    }
    if (n_prompt > steps) {
        fprintf(stderr, "ml_run: the prompt is %d tokens, more than %s of %d\n", n_prompt,
                n_prompt > c->max_seq ? "the context" : "-n", steps);
        rc = ML_EXIT_USAGE;
        goto done;
    }
    if ((o.logits_path && !(flog = open_out(o.logits_path))) || (o.ids_path && !(fids = open_out(o.ids_path))))
        goto done;

    run_ctx r = {.tok = &tok, .logits = flog, .ids = fids};
    /* on_token sees every token after the first, forced or sampled; the
     * prompt's own pieces are echoed as they are fed, like llama2.c. */
    if (fids) fprintf(fids, "%d\n", prompt[0]);
    ml_gen_callbacks cb = {.on_logits = on_logits, .on_token = on_token, .ud = &r};
    ml_sampler smp;
    unsigned long long seed = o.seed ? o.seed : (unsigned long long)time(NULL);
    ml_sampler_init(&smp, c->vocab, (float)o.temperature, (float)o.topp, seed, m.s.scratch);

    int n_pos = 0;
    double t1 = ml_cli_now();
    s = ml_generate(&m, &smp, prompt, n_prompt, steps, &cb, &n_pos, &err);
    double dt = ml_cli_now() - t1;
    printf("\n");
    if (s) {
        rc = fail("generating", s, &err);
        goto done;
    }
    if (r.io_error) {
        fprintf(stderr, "ml_run: writing --logits/--ids output failed\n");
        goto done;
    }
    fprintf(stderr, "ml_run: %d tokens in %.3f s: %.1f tok/s, %.3f ms/token\n", n_pos, dt,
            dt > 0 ? n_pos / dt : 0.0, n_pos ? dt * 1e3 / n_pos : 0.0);
    rc = ML_EXIT_OK;
done:
    if (flog && fclose(flog)) rc = ML_EXIT_FAIL;
    if (fids && fclose(fids)) rc = ML_EXIT_FAIL;
    free(prompt);
    ml_tokenizer_free(&tok);
    ml_model_close(&m);
    return rc;
}
