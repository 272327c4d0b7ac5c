/* ml_run: load a .mlb model and a llama2.c tokenizer, generate text.
 * The only layer (with the other app/ programs) that prints and exits. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "app/cli.h"
#include "app/exit_codes.h"
#include "app/run_text.h"
#include "config/ml_config.h"
#include "core/path.h"
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
            "  -f FILE        prompt from FILE (- = stdin), one trailing newline removed\n"
            "  --stop STR     end the generation when the generated text ends with STR,\n"
            "                 which is not printed (--ids still lists its tokens);\n"
            "                 up to %d of them\n"
            "  -n N           tokens to run, prompt included (default %d, or the whole\n"
            "                 context if shorter or if the prompt is longer; 0 = the whole\n"
            "                 context)\n"
            "  --temp T       temperature >= 0 (default 1.0; 0 = greedy)\n"
            "  --top-p P      nucleus sampling in [0, 1] (default 0.9; 0 or 1 = off)\n"
            "  --top-k N      keep the N most likely tokens (default 0 = off)\n"
            "  --min-p P      keep tokens with p >= P x the top token's p, P in [0, 1]\n"
            "                 (default 0 = off)\n"
            "  --repeat-penalty F  penalize the tokens of the last --repeat-last-n\n"
            "                 (llama.cpp's rule: positive logits / F, negative x F;\n"
            "                 F > 0, default 1 = off)\n"
            "  --repeat-last-n N   the penalty's window (default 64; 0 = off, -1 = context)\n"
            "  -s SEED        random seed (default: from the clock)\n"
            "  -t N           threads (default: the CPUs this process may use, at most %d;\n"
            "                 1 in a THREADS=1 build)\n"
            "  -c N           cap the context, and so the KV cache, at N tokens (an N above\n"
            "                 the model's context has no effect)\n"
            "  -b N           prompt tokens per batch (default %d; 1 = token by token). The\n"
            "                 output is the same for every N; generation is token by token\n"
            "  --no-mmap      read the model into memory instead of mapping it\n"
            "  --logits FILE  write each position's logits (float32 x vocab) to FILE\n"
            "  --ids FILE     write the token ids (prompt, then generated), one per line\n"
            "  --cpu-info     print what this CPU supports and which build to use\n"
            "                 (--cpu-info --json: the same as one line of JSON)\n"
            "  --version      print the version and the build, and exit\n"
            "build: %s\n",
            ML_STOP_MAX, DEFAULT_STEPS, ML_THREADS_DEFAULT_MAX, ML_RUN_DEFAULT_BATCH, ML_ISA_NAME);
}

static int fail(const char *what, ml_status s, const ml_err *err) {
    fprintf(stderr, "ml_run: %s failed (%s): %s\n", what, ml_status_name(s), err->msg);
    return ML_EXIT_FAIL;
}

/* Options are parsed by ml_run_parse_args (app/cli.c, fuzzed by
 * fuzz/fuzz_cli.c); this prints what it decided. Returns ML_CLI_RUN or an
 * exit code. */
static int parse_args(int argc, char **argv, ml_run_opts *o) {
    char msg[512];
    int rc = ml_run_parse_args(argc, argv, o, msg, sizeof msg);
    if (rc == ML_EXIT_OK) usage(stdout);
    if (rc == ML_EXIT_USAGE) {
        fprintf(stderr, "ml_run: %s\n\n", msg);
        usage(stderr);
    }
    return rc;
}

/* ---- output ------------------------------------------------------------ */

typedef struct {
    const ml_tokenizer *tok;
    FILE *logits, *ids; /* write errors stay in ferror(): finish_outputs reports them */
    int printed;        /* some text went to stdout */
    double t_prompt;    /* when the prompt had run (ml_cli_now) */
    int generating;     /* the prompt is done: tokens are sampled, --stop applies */
    ml_stop_text stop;  /* --stop: holds back what may start a stop string */
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
    if (piece && r->generating) ml_stop_text_feed(&r->stop, piece, len);
    else if (piece) print_piece(piece, len);
    r->printed = 1;
    if (r->ids) fprintf(r->ids, "%d\n", token);
}

static void on_prompt_done(void *ud, int n_prompt) {
    run_ctx *r = ud;
    (void)n_prompt;
    r->t_prompt = ml_cli_now();
    r->generating = 1;
}

static void emit_text(void *ud, const char *p, size_t len) {
    (void)ud;
    print_piece(p, len);
}

static int should_stop(void *ud) { return ((run_ctx *)ud)->stop.stopped; }

static void on_logits(void *ud, int pos, const float *logits, int vocab) {
    run_ctx *r = ud;
    (void)pos;
    if (r->logits) fwrite(logits, sizeof *logits, (size_t)vocab, r->logits);
}

/* --logits and --ids files are complete or absent: a run that fails after
 * creating them deletes them (a write error, a generation error, or the
 * other file not opening). Devices and pipes (/dev/stdout, a FIFO) are
 * written through and never deleted. */
typedef struct {
    const char *path;
    FILE *f;
    int regular; /* a regular file: deleted on failure */
} out_file;

static int open_out(out_file *o, const char *path) {
    *o = (out_file){.path = path};
    if (!path) return 1;
    o->f = ml_fopen(path, "wb");
    if (!o->f) {
        fprintf(stderr, "ml_run: cannot write '%s': %s\n", path, strerror(errno));
        return 0;
    }
    struct stat st;
    o->regular = fstat(fileno(o->f), &st) == 0 && S_ISREG(st.st_mode);
    return 1;
}

/* Close every output; a write error fails the run. On failure delete the
 * regular files. Returns rc, or ML_EXIT_FAIL after a write error. */
static int finish_outputs(out_file *o, int n, int rc) {
    for (int i = 0; i < n; i++) {
        if (!o[i].f) continue;
        int bad = ferror(o[i].f);
        if (fclose(o[i].f)) bad = 1;
        o[i].f = NULL;
        if (bad && rc == ML_EXIT_OK) {
            fprintf(stderr, "ml_run: writing '%s' failed (disk full?)\n", o[i].path);
            rc = ML_EXIT_FAIL;
        }
    }
    for (int i = 0; i < n; i++) {
        if (rc != ML_EXIT_OK && o[i].regular) {
            ml_remove(o[i].path);
            o[i].regular = 0;
        }
    }
    return rc;
}

/* ---- main -------------------------------------------------------------- */

int ml_main(int argc, char **argv) {
    ml_run_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc != ML_CLI_RUN) return rc;
    char *prompt_text = NULL; /* -f: the file's text, read before the model loads */
    if (o.prompt_file) {
        char msg[512];
        if (!(prompt_text = ml_run_read_prompt(o.prompt_file, msg, sizeof msg))) {
            fprintf(stderr, "ml_run: %s\n", msg);
            return ML_EXIT_FAIL;
        }
        o.prompt = prompt_text;
    }

    ml_err err = {{0}};
    ml_model m;
    ml_tokenizer tok;
    ml_status s;
    double t0 = ml_cli_now();
    /* --logits wants every prompt position's logits, not only the last. */
    ml_open_opts oo = {.use_mmap = o.use_mmap, .max_seq = (int)o.context, .n_threads = (int)o.threads,
                       .batch = (int)o.batch, .all_logits = o.logits_path != NULL};
    if ((s = ml_model_open(&m, o.model, &oo, &err))) {
        free(prompt_text);
        return fail("loading the model", s, &err);
    }
    const ml_config *c = &m.cfg;
    if ((s = ml_tokenizer_load(&tok, o.tokenizer, c->vocab, &err))) {
        ml_model_close(&m);
        free(prompt_text);
        return fail("loading the tokenizer", s, &err);
    }
    double t_load = ml_cli_now() - t0;
    fprintf(stderr,
            "ml_run: %s build, -t %d; prompt batch %d; model dim %d, %d layers, %d/%d heads, hidden %d, vocab %d, context %d, %s\n"
            "ml_run: weights %.2f MiB %s, arena %.2f MiB (KV cache %.2f MiB); loaded in %.1f ms\n",
            ML_ISA_NAME, ml_pool_size(m.ops.pool), m.b.cap > 1 ? m.b.cap : 1, c->dim, c->n_layers, c->n_heads, c->n_kv_heads, c->hidden_dim, c->vocab,
            c->max_seq, c->wtype == ML_TYPE_Q8_0 ? "Q8_0" : "Q4_0", m.weight_bytes / 1048576.0,
            ml_file_kind_name(m.file.kind), m.arena.cap / 1048576.0,
            m.kv_bytes / 1048576.0, t_load * 1e3);

    /* Steps: explicit values must fit the context; the default shrinks to it. */
    int steps = o.steps < 0 ? (DEFAULT_STEPS < c->max_seq ? DEFAULT_STEPS : c->max_seq)
                : o.steps == 0 ? c->max_seq : (int)o.steps;
    int *prompt = NULL;
    out_file outs[2] = {{0}, {0}}; /* --logits, --ids */
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
    if (o.steps < 0 && n_prompt > steps) steps = c->max_seq; /* a long prompt, no -n */
    if (n_prompt > steps) {
        fprintf(stderr, "ml_run: the prompt is %d tokens, more than %s of %d\n", n_prompt,
                n_prompt > c->max_seq ? "the context" : "-n", n_prompt > c->max_seq ? c->max_seq : steps);
        rc = ML_EXIT_USAGE;
        goto done;
    }
    if (!open_out(&outs[0], o.logits_path) || !open_out(&outs[1], o.ids_path)) goto done;

    run_ctx r = {.tok = &tok, .logits = outs[0].f, .ids = outs[1].f};
    /* on_token sees every token after the first, forced or sampled; the
     * prompt's own pieces are echoed as they are fed, like llama2.c. */
    if (r.ids) fprintf(r.ids, "%d\n", prompt[0]);
    ml_stop_text_init(&r.stop, o.stops, o.n_stops, emit_text, NULL);
    ml_gen_callbacks cb = {.on_logits = r.logits ? on_logits : NULL, .on_token = on_token,
                           .on_prompt_done = on_prompt_done, .should_stop = should_stop, .ud = &r};
    ml_sampler smp;
    unsigned long long seed = o.seed ? o.seed : (unsigned long long)time(NULL);
    ml_sampler_init(&smp, c->vocab, (float)o.temperature, (float)o.topp, seed, m.s.sampler_scratch);
    if ((s = ml_sampler_set_filters(&smp, (int)o.top_k, (float)o.min_p, (float)o.repeat_penalty,
                                    (int)o.repeat_last_n, c->max_seq, &err))) {
        rc = fail("setting up the sampler", s, &err);
        goto done;
    }

    int n_pos = 0;
    double t1 = ml_cli_now();
    s = ml_generate(&m, &smp, prompt, n_prompt, steps, &cb, &n_pos, &err);
    double dt = ml_cli_now() - t1;
    ml_stop_text_flush(&r.stop);
    if (s == ML_OK || r.printed) printf("\n"); /* a refusal before any text prints none */
    if (s) {
        rc = fail("generating", s, &err);
        goto done;
    }
    if (fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "ml_run: writing the text to stdout failed\n");
        goto done;
    }
    if ((rc = finish_outputs(outs, 2, ML_EXIT_OK)) != ML_EXIT_OK) goto done;
    double dp = r.t_prompt - t1, dg = dt - dp;
    fprintf(stderr, "ml_run: %d tokens in %.3f s: %.1f tok/s, %.3f ms/token; prompt %d in %.3f s (%.1f tok/s, -b %d),"
            " then %d in %.3f s (%.1f tok/s)\n", n_pos, dt, dt > 0 ? n_pos / dt : 0.0, n_pos ? dt * 1e3 / n_pos : 0.0,
            n_prompt, dp, dp > 0 ? n_prompt / dp : 0.0, m.b.cap > 1 ? m.b.cap : 1, n_pos - n_prompt, dg,
            dg > 0 ? (n_pos - n_prompt) / dg : 0.0);
done:
    rc = finish_outputs(outs, 2, rc);
    free(prompt);
    free(prompt_text);
    ml_tokenizer_free(&tok);
    ml_model_close(&m);
    return rc;
}
