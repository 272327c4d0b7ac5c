/* ml_run: load a .mlb model and its tokenizer (llama2.c or BPE), generate text.
 * The only layer (with the other app/ programs) that prints and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/chat.h"
#include "app/cli.h"
#include "app/exit_codes.h"
#include "app/run_spec.h"
#include "app/run_text.h"
#include "config/ml_config.h"
#include "core/outfile.h"
#include "core/status.h"
#include "core/threads.h" /* ML_THREADS_DEFAULT_MAX */
#include "include/legacy_ml.h"

#define DEFAULT_STEPS 256

static void usage(FILE *f) {
    fprintf(f,
            "usage: ml_run -m model.mlb [-z tokenizer.bin] [options]\n"
            "  -m FILE        model, converted by tools/convert.py, or a GGUF file (converted\n"
            "                 once into the cache ~/.cache/legacy-ml; README)\n"
            "  -z FILE        llama2.c tokenizer.bin or BPE tokenizer file (tools/tokfile.py)\n"
            "                 matching the model's vocab (default: the one a .mlb version 2\n"
            "                 model embeds)\n"
            "  -i TEXT        prompt (default: none, the story starts from BOS)\n"
            "  -f FILE        prompt from FILE (- = stdin), one trailing newline removed\n"
            "  --stop STR     end the generation when the generated text ends with STR,\n"
            "                 which is not printed (--ids still lists its tokens);\n"
            "                 up to %d of them\n"
            "  -n N           tokens to run, prompt included (default %d, or the whole\n"
            "                 context if shorter or if the prompt is longer; 0 = the whole\n"
            "                 context)\n"
            "  --temp T       temperature >= 0 (default 1.0; 0 = greedy); -T T as in llama2.c\n"
            "  --top-p P      nucleus sampling in [0, 1] (default 0.9; 0 or 1 = off); -p P as in llama2.c\n"
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
            "  -c N           cap the context, and so the KV cache, at N tokens (default\n"
            "                 4096, as llama.cpp; an N above the model's context has no\n"
            "                 effect; 0 = the model's whole context)\n"
            "  -b N           prompt tokens per batch (default %d; 1 = token by token). The\n"
            "                 output is the same for every N; generation is token by token\n"
            "  --no-mmap      read the model into memory (default: when it takes at most half\n"
            "                 of the available memory, which decodes faster; else mapped)\n"
            "  --mmap         map the model file instead (less memory, slower decode)\n"
            "  --logits FILE  write each position's logits (float32 x vocab) to FILE\n"
            "  --ids FILE     write the token ids (prompt, then generated), one per line\n"
            "  --lookup N     speculative decoding by prompt lookup: up to N (1..%d) drafts\n"
            "                 a step, the tokens that followed the text's latest repeat;\n"
            "                 the output is the same, faster when the text repeats itself\n"
            "  --draft-model FILE  speculative decoding with a smaller model of the same\n"
            "                 tokenizer drafting greedily (--draft N drafts a step, default 8;\n"
            "                 --draft-tokenizer FILE: its tokenizer, checked against -z's)\n"
            "  --chat         chat on stdin/stdout (app/chat.c): --chat-template NAME\n"
            "                 (chatml, llama3, zephyr, llama2, deepseek-r1), --system TEXT; -n caps a reply\n"
            "  --cpu-info     print what this CPU supports and which build to use\n"
            "                 (--cpu-info --json: the same as one line of JSON)\n"
            "  --version      print the version and the build, and exit\n"
            "llama.cpp's --model, --prompt, --file, --seed, --threads, --ctx-size and\n"
            "--batch-size work too (-n differs: it counts the prompt's tokens as well)\n"
            "build: %s\n",
            ML_STOP_MAX, DEFAULT_STEPS, ML_THREADS_DEFAULT_MAX, ML_RUN_DEFAULT_BATCH, ML_CLI_MAX_DRAFT, ML_ISA_NAME);
}

/* The library's statuses are model/'s (ML_E_FORMAT: the name ml_run prints). */
static int fail(const char *what, lml_status s, const lml_error *err) {
    fprintf(stderr, "ml_run: %s failed (%s): %s\n", what, ml_status_name((ml_status)s), err->message);
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
    int byte_level;       /* BPE: a character split across tokens is printed whole ... */
    lml_utf8_state utf8;  /* ... through this */
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

static void emit_piece(run_ctx *r, const char *piece, size_t len) {
    if (piece && r->generating) ml_stop_text_feed(&r->stop, piece, len);
    else if (piece) print_piece(piece, len);
}

static void show_piece(run_ctx *r, const char *piece, size_t len) {
    char whole[LML_PIECE_MAX + 8];
    if (piece && r->byte_level) {
        if (len > LML_PIECE_MAX) len = LML_PIECE_MAX; /* the longest a BPE piece is */
        len = lml_utf8_feed(&r->utf8, piece, len, whole);
        piece = whole;
    }
    emit_piece(r, piece, len);
}

/* Nonzero (--stop) ends the generation after a sampled token. */
static int on_token(void *ud, int token, const char *piece, size_t len) {
    run_ctx *r = ud;
    show_piece(r, piece, len);
    r->printed = 1;
    if (r->ids) fprintf(r->ids, "%d\n", token);
    return r->stop.stopped;
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

static int on_logits(void *ud, int pos, const float *logits, int vocab) {
    run_ctx *r = ud;
    (void)pos;
    if (r->logits) fwrite(logits, sizeof *logits, (size_t)vocab, r->logits);
    return 0;
}

/* --logits and --ids (core/outfile.h): each is written to a temporary and
 * renamed over its target only when the run succeeds, so a failed run
 * leaves a previous file as it was; devices and pipes (/dev/stdout, a FIFO)
 * are written through. Neither may be one of the run's inputs. */
typedef struct {
    const char *what; /* "--logits" */
    ml_outfile o;
} out_file;

/* Refuse an empty output name, an output that is an input (the model as
 * named and, for a GGUF, its converted cache), or both outputs in one file
 * (however spelled): exit code 2, printing why. Returns ML_CLI_RUN or the
 * exit code. */
static int check_outputs(const ml_run_opts *o, const char *model_arg, const char *model_cache) {
    const char *prompt_file = o->prompt_file && strcmp(o->prompt_file, "-") ? o->prompt_file : NULL;
    const ml_named_path inputs[] = {{"the model -m", model_arg},
                                    {"the GGUF's converted model", model_cache},
                                    {"the tokenizer -z", o->tokenizer},
                                    {"the prompt file -f", prompt_file},
                                    {"the draft model --draft-model", o->draft_model},
                                    {"the draft tokenizer --draft-tokenizer", o->draft_tokenizer}};
    const int n_inputs = (int)(sizeof inputs / sizeof *inputs);
    const char *paths[2] = {o->logits_path, o->ids_path}, *names[2] = {"--logits", "--ids"};
    ml_err err = {{0}};
    for (int i = 0; i < 2; i++) {
        if (paths[i] && !paths[i][0]) {
            fprintf(stderr, "ml_run: %s: the file name is empty\n", names[i]);
            return ML_EXIT_USAGE;
        }
        if (paths[i] && ml_outfile_check(names[i], paths[i], inputs, n_inputs, &err)) {
            fprintf(stderr, "ml_run: %s\n", err.msg);
            return ML_EXIT_USAGE;
        }
    }
    if (paths[0] && paths[1] && ml_outfile_same(paths[0], paths[1])) {
        fprintf(stderr, "ml_run: --logits '%s' and --ids '%s' are one file; give them two files\n", paths[0], paths[1]);
        return ML_EXIT_USAGE;
    }
    return ML_CLI_RUN;
}

/* check_outputs, then open both (exit code 1 if one cannot be). Before any
 * work. Returns ML_CLI_RUN or the exit code. */
static int open_outputs(out_file *outs, const ml_run_opts *o, const char *model_arg) {
    int rc = check_outputs(o, model_arg, o->model != model_arg ? o->model : NULL);
    if (rc != ML_CLI_RUN) return rc;
    const char *paths[2] = {o->logits_path, o->ids_path};
    ml_err err = {{0}};
    for (int i = 0; i < 2; i++) {
        if (paths[i] && ml_outfile_open(&outs[i].o, outs[i].what, paths[i], &err)) {
            fprintf(stderr, "ml_run: %s\n", err.msg);
            return ML_EXIT_FAIL;
        }
    }
    return ML_CLI_RUN;
}

/* rc OK: commit every output (a write error fails the run; one line says
 * which file a commit replaced). Otherwise, or after a failed commit, drop
 * the temporaries. Returns rc, or ML_EXIT_FAIL after a write error. */
static int finish_outputs(out_file *outs, int n, int rc) {
    ml_err err = {{0}};
    for (int i = 0; i < n && rc == ML_EXIT_OK; i++) {
        if (!outs[i].o.f) continue;
        int replaces = outs[i].o.replaces;
        if (ml_outfile_commit(&outs[i].o, &err)) {
            fprintf(stderr, "ml_run: %s: %s\n", outs[i].what, err.msg);
            rc = ML_EXIT_FAIL;
        } else if (replaces) {
            fprintf(stderr, "ml_run: %s: replaced '%s'\n", outs[i].what, outs[i].o.path);
        }
    }
    for (int i = 0; i < n; i++) ml_outfile_abort(&outs[i].o);
    return rc;
}

/* ---- main -------------------------------------------------------------- */

int ml_main(int argc, char **argv) {
    ml_cli_clean_on_signal();
    if (ml_chat_wanted(argc, argv)) return ml_chat_main(argc, argv); /* app/chat.c */
    ml_run_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc != ML_CLI_RUN) return rc;
    /* The outputs are checked against the inputs before a GGUF converts
     * (which takes a while), and again against what it converted to. */
    const char *model_arg = o.model;
    if ((rc = check_outputs(&o, model_arg, NULL)) != ML_CLI_RUN) return rc;
    char gguf_mlb[4096]; /* -m X.gguf: its cached .mlb */
    if (!(o.model = ml_cli_model_path("ml_run", o.model, gguf_mlb, sizeof gguf_mlb))) return ML_EXIT_FAIL;
    char *prompt_text = NULL; /* -f: the file's text, read before the model loads */
    if (o.prompt_file) {
        char msg[512];
        if (!(prompt_text = ml_run_read_prompt(o.prompt_file, msg, sizeof msg))) {
            fprintf(stderr, "ml_run: %s\n", msg);
            return ML_EXIT_FAIL;
        }
        o.prompt = prompt_text;
    }

    out_file outs[2] = {{.what = "--logits"}, {.what = "--ids"}};
    if ((rc = open_outputs(outs, &o, model_arg)) != ML_CLI_RUN) {
        free(prompt_text);
        return finish_outputs(outs, 2, rc);
    }

    lml_error err = {{0}};
    lml_model *m;
    lml_status s;
    double t0 = ml_cli_now();
    /* --logits wants every prompt position's logits, not only the last;
     * speculation every drafted position's, in batches of drafts + 1. The
     * tokenizer is loaded apart, so its failure keeps its own message. */
    int n_draft = ml_run_spec_drafts(&o);
    lml_model_options oo = {.load = ml_cli_load_mode(o.use_mmap), .context = (int)o.context, .threads = (int)o.threads,
                            .batch = (int)o.batch, .all_logits = o.logits_path != NULL || n_draft,
                            .no_tokenizer = 1};
    if (n_draft && oo.batch < n_draft + 1) oo.batch = n_draft + 1;
    if ((s = lml_model_open(&m, o.model, &oo, &err))) {
        free(prompt_text);
        return finish_outputs(outs, 2, fail("loading the model", s, &err));
    }
    lml_model_info info, *c = &info;
    lml_model_get_info(m, &info);
    if (!o.tokenizer && !info.embeds_tokenizer) {
        fprintf(stderr, "ml_run: missing -z tokenizer.bin (%s embeds no tokenizer)\n", o.model);
        lml_model_close(m);
        free(prompt_text);
        return finish_outputs(outs, 2, ML_EXIT_USAGE);
    }
    if ((s = lml_model_load_tokenizer(m, o.tokenizer, &err))) {
        lml_model_close(m);
        free(prompt_text);
        return finish_outputs(outs, 2, fail("loading the tokenizer", s, &err));
    }
    lml_model_get_info(m, &info);
    double t_load = ml_cli_now() - t0;
    /* A context below the model's (-c, or the default cap) says how to raise it. */
    char capped[64] = "";
    if (c->context < c->train_context)
        snprintf(capped, sizeof capped, " (the model's %d: -c N raises it)", c->train_context);
    fprintf(stderr,
            "ml_run: %s build, -t %d; prompt batch %d; model dim %d, %d layers, %d/%d heads, hidden %d, vocab %d, context %d%s, %s\n"
            "ml_run: weights %.2f MiB %s, arena %.2f MiB (KV cache %.2f MiB); loaded in %.1f ms\n",
            lml_build_isa(), c->threads, c->batch, c->dim, c->n_layers, c->n_heads, c->n_kv_heads, c->hidden_dim, c->vocab,
            c->context, capped, c->weights, c->weight_bytes / 1048576.0, c->storage, c->arena_bytes / 1048576.0,
            c->kv_bytes / 1048576.0, t_load * 1e3);

    /* Steps: explicit values must fit the context; the default shrinks to it. */
    int steps = o.steps < 0 ? (DEFAULT_STEPS < c->context ? DEFAULT_STEPS : c->context)
                : o.steps == 0 ? c->context : (int)o.steps;
    int *prompt = NULL;
    ml_run_spec spec;
    if ((rc = ml_run_spec_open(&spec, &o, m)) != ML_EXIT_OK) goto done;
    rc = ML_EXIT_FAIL;
    if (o.steps > c->context) {
        fprintf(stderr, "ml_run: -n %ld exceeds the context of %d tokens (use -n 0 for all of it)%s\n",
                o.steps, c->context, capped);
        rc = ML_EXIT_USAGE;
        goto done;
    }
    size_t cap = lml_tokenize_capacity(o.prompt);
    prompt = malloc(cap * sizeof *prompt);
    if (!prompt) {
        fprintf(stderr, "ml_run: out of memory for the prompt\n");
        goto done;
    }
    int n_prompt = 0;
    if ((s = lml_tokenize(m, o.prompt, c->add_bos, prompt, cap, &n_prompt, &err))) {
        rc = fail("encoding the prompt", s, &err);
        goto done;
    }
    if (n_prompt == 0) {
        fprintf(stderr, "ml_run: the prompt is empty and this tokenizer starts with no BOS: give a prompt (-i)\n");
        rc = ML_EXIT_USAGE;
        goto done;
    }
    if (o.steps < 0 && n_prompt > steps) steps = c->context; /* a long prompt, no -n */
    if (n_prompt > steps) {
        fprintf(stderr, "ml_run: the prompt is %d tokens, more than %s of %d%s\n", n_prompt,
                n_prompt > c->context ? "the context" : "-n", n_prompt > c->context ? c->context : steps,
                n_prompt > c->context ? capped : "");
        rc = ML_EXIT_USAGE;
        goto done;
    }
    run_ctx r = {.byte_level = c->byte_level, .logits = outs[0].o.f, .ids = outs[1].o.f};
    /* on_token sees every token after the first, forced or sampled; the
     * prompt's own pieces are echoed as they are fed, like llama2.c. */
    if (r.ids) fprintf(r.ids, "%d\n", prompt[0]);
    if (!c->add_bos) { /* no BOS: the prompt's first token is text */
        size_t len = 0;
        const char *piece = lml_token_piece(m, -1, prompt[0], &len);
        show_piece(&r, piece, len);
    }
    ml_stop_text_init(&r.stop, o.stops, o.n_stops, emit_text, NULL);
    lml_callbacks cb = {.on_logits = r.logits ? on_logits : NULL, .on_token = on_token,
                        .on_prompt_done = on_prompt_done, .ud = &r};
    lml_sampler_options smp = {.temperature = (float)o.temperature, .top_p = (float)o.topp, .top_k = (int)o.top_k,
                               .min_p = (float)o.min_p, .repeat_penalty = (float)o.repeat_penalty,
                               .repeat_last_n = (int)o.repeat_last_n,
                               .seed = o.seed ? o.seed : (unsigned long long)time(NULL)};

    int n_pos = 0;
    double t1 = ml_cli_now();
    s = lml_generate(m, prompt, n_prompt, steps, &smp, &cb, &n_pos, &err);
    double dt = ml_cli_now() - t1;
    char rest[8];
    emit_piece(&r, rest, lml_utf8_flush(&r.utf8, rest));
    ml_stop_text_flush(&r.stop);
    if (s == LML_OK || r.printed) printf("\n"); /* a refusal before any text prints none */
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
            n_prompt, dp, dp > 0 ? n_prompt / dp : 0.0, c->batch, n_pos - n_prompt, dg,
            dg > 0 ? (n_pos - n_prompt) / dg : 0.0);
    if (spec.n_draft) ml_run_spec_report(&spec, stderr);
done:
    rc = finish_outputs(outs, 2, rc);
    free(prompt);
    free(prompt_text);
    ml_run_spec_close(&spec);
    lml_model_close(m);
    return rc;
}
