/* ml_bench's model figures: decode tok/s, ms/token, effective GB/s of
 * weights streamed and resident memory, and prompt tok/s (a -p token prompt
 * through ml_forward_batch, -b tokens per batch), per thread count, for a
 * .mlb (-m) or for random weights built in memory at a named shape (--shape). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/bench.h"
#include "core/mem.h"
#include "app/bench_shapes.h"
#include "app/cli.h"
#include "app/exit_codes.h"
#include "config/ml_config.h"
#include "model/model.h"
#include "model/sampler.h"

/* A field of /proc/self/status in KiB ("VmRSS:" now, "VmHWM:" the peak); -1 elsewhere. */
static long status_kib(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && sscanf(line + n, "%ld", &kib) == 1) break;
    fclose(f);
    return kib;
}

/* Greedy decode of `tokens` tokens from position pos0 (llama-bench's tg at
 * pos0 0; llama-batched-bench's S_TG after a context of pos0 tokens). */
static double decode_seconds(ml_model *m, int pos0, int tokens) {
    int token = 1;
    ml_err err;
    double t0 = ml_cli_now();
    for (int pos = pos0; pos < pos0 + tokens; pos++) {
        if (ml_forward(m, token, pos, &err)) return -1;
        token = ml_argmax(m->s.logits, m->cfg.vocab);
    }
    return ml_cli_now() - t0;
}

/* BOS, then tokens spread over the vocabulary (the weights do not care which). */
static int *prompt_tokens(int n, int vocab) {
    int *tokens = malloc((size_t)(n > 0 ? n : 1) * sizeof *tokens);
    if (!tokens) {
        fprintf(stderr, "ml_bench: out of memory for a %d-token prompt\n", n);
        return NULL;
    }
    for (int i = 0; i < n; i++) tokens[i] = i ? (int)((1 + 7919u * (unsigned)i) % (unsigned)vocab) : 1;
    return tokens;
}

/* A prompt of n tokens from position 0 in batches (llama-bench's pp). */
static double prompt_seconds(ml_model *m, const int *tokens, int n) {
    ml_err err;
    double t0 = ml_cli_now();
    if (ml_forward_batch(m, tokens, n, 0, NULL, NULL, &err)) return -1;
    return ml_cli_now() - t0;
}

/* The prompt figure and its #row line, beside the decode figure. */
static int bench_prompt(const ml_bench_opts *o, ml_model *m, const char *label, const char *tn, int nth) {
    int n = o->prompt < m->cfg.max_seq ? o->prompt : m->cfg.max_seq;
    int *tokens = prompt_tokens(n, m->cfg.vocab);
    if (!tokens) return ML_EXIT_FAIL;
    prompt_seconds(m, tokens, n < 8 ? n : 8); /* warm caches */
    double t[64];
    for (int r = 0; r < o->reps; r++) t[r] = prompt_seconds(m, tokens, n);
    free(tokens);
    ml_bench_stats st = ml_bench_summarize(t, o->reps);
    if (st.lo < 0) {
        fprintf(stderr, "ml_bench: %s: the prompt failed\n", label);
        return ML_EXIT_FAIL;
    }
    printf("  %-12s %s  %dT  %8.1f tok/s  pp%d, -b %d  (%.1f-%.1f tok/s)\n", label, tn, nth, n / st.med, n,
           m->b.cap > 1 ? m->b.cap : 1, n / st.hi, n / st.lo);
    printf("#row pp%d %s %s_%s_%dT %.2f\n", n, ML_ISA_NAME, label, tn, nth, n / st.med);
    return ML_EXIT_OK;
}

static int bench_model(const ml_bench_opts *o, const ml_bench_bw *bw, const char *label, const void *data,
                       size_t size, int nth) {
    ml_model m;
    ml_err err = {{0}};
    ml_open_opts oo = {.use_mmap = o->use_mmap, .n_threads = nth, .batch = o->batch};
    double t_open = ml_cli_now();
    ml_status s = data ? ml_model_open_buffer(&m, data, size, label, &oo, &err)
                       : ml_model_open(&m, o->model_path, &oo, &err);
    if (s) {
        fprintf(stderr, "ml_bench: %s: %s (%s)\n", label, err.msg, ml_status_name(s));
        return ML_EXIT_FAIL;
    }
    t_open = ml_cli_now() - t_open;
    /* The context (-d) is filled once, untimed: each run decodes over the
     * same positions from there, and the cache below them stays valid. */
    int depth = o->depth;
    if (depth >= m.cfg.max_seq) {
        fprintf(stderr, "ml_bench: %s: -d %d: expected a context below the model's %d positions\n", label, depth,
                m.cfg.max_seq);
        ml_model_close(&m);
        return ML_EXIT_FAIL;
    }
    int tokens = o->tokens < m.cfg.max_seq - depth ? o->tokens : m.cfg.max_seq - depth;
    if (depth) {
        int *ctx = prompt_tokens(depth, m.cfg.vocab);
        s = ctx ? ml_forward_batch(&m, ctx, depth, 0, NULL, NULL, &err) : ML_E_NOMEM;
        free(ctx);
        if (s) {
            fprintf(stderr, "ml_bench: %s: the %d-token context failed: %s\n", label, depth, err.msg);
            ml_model_close(&m);
            return ML_EXIT_FAIL;
        }
    }
    /* Bytes of weights one token streams: every matrix once, plus one embedding row. */
    double per_tok = (double)m.weight_bytes - (m.cfg.shared_classifier ? 0.0 : (double)(
        ml_quant_bytes(m.cfg.wtype, (uint64_t)m.cfg.vocab * m.cfg.dim) + (uint64_t)m.cfg.vocab * m.cfg.dim / ML_QK * 4));
    decode_seconds(&m, depth, tokens < 8 ? tokens : 8); /* warm caches and page in */
    double t[64];
    for (int r = 0; r < o->reps; r++) t[r] = decode_seconds(&m, depth, tokens);
    ml_bench_stats st = ml_bench_summarize(t, o->reps);
    double tps = tokens / st.med;
    const char *tn = m.cfg.wtype == ML_TYPE_Q8_0 ? "q8_0" : "q4_0";
    printf("  %-12s %s  %dT  %8.1f tok/s  %7.3f ms/token  %6.1f GB/s  RSS %6.1f MiB  (%.1f-%.1f tok/s; weights %s,"
           " opened in %.0f ms, peak RSS %.1f MiB)\n",
           label, tn, nth, tps, 1e3 / tps, per_tok * tps / 1e9, status_kib("VmRSS:") / 1024.0,
           tokens / st.hi, tokens / st.lo, ml_file_kind_name(m.file.kind), t_open * 1e3, status_kib("VmHWM:") / 1024.0);
    if (o->bw) {
        double med, peak = ml_bench_read_bandwidth(bw, o->reps, nth, &med);
        if (peak > 0) {
            printf("  %-12s %s  %dT  %5.1f%% of the read bandwidth measured next: %.1f GB/s (median %.1f)\n", label,
                   tn, nth, 100.0 * per_tok * tps / 1e9 / peak, peak, med);
            printf("#row bw %s %s_%s_%dT %.2f\n", ML_ISA_NAME, label, tn, nth, peak);
        } else
            printf("  %-12s read bandwidth not measured: no memory for its 1 GiB buffer\n", label);
    }
    if (depth) /* tg at depth: its own row, never mistaken for tg from position 0 */
        printf("#row tg%d@d%d %s %s_%s_%dT %.2f\n", tokens, depth, ML_ISA_NAME, label, tn, nth, tps);
    else
        printf("#row model %s %s_%s_%dT %.2f\n", ML_ISA_NAME, label, tn, nth, tps);
    int rc = o->prompt ? bench_prompt(o, &m, label, tn, nth) : ML_EXIT_OK;
    fflush(stdout);
    ml_model_close(&m);
    return rc;
}

/* A named shape's .mlb image with random weights (model/mlb_random.h), in a
 * buffer the model decodes from in place. */
static int bench_shape(const ml_bench_opts *o, const ml_bench_bw *bw, const ml_bench_shape *s, int wtype,
                       ml_rng *rng) {
    ml_mlb_header h = ml_mlb_make_header((uint32_t)s->dim, (uint32_t)s->n_layers, (uint32_t)s->n_heads,
                                         (uint32_t)s->n_kv_heads, (uint32_t)s->hidden_dim, (uint32_t)s->vocab,
                                         (uint32_t)s->max_seq, (uint32_t)wtype, (uint32_t)s->shared_classifier);
    size_t size = (size_t)ml_mlb_random_bytes(&h);
    unsigned char *img = ml_bench_alloc(size);
    if (!img) {
        fprintf(stderr, "ml_bench: out of memory building %s\n", s->name);
        return ML_EXIT_FAIL;
    }
    ml_mlb_random_fill(img, &h, ml_rng_next(rng));
    int rc = ML_EXIT_OK;
    for (int t = 0; t < o->n_threads && !rc; t++) rc = bench_model(o, bw, s->name, img, size, o->threads[t]);
    ml_aligned_free(img);
    return rc;
}

int ml_bench_models(const ml_bench_opts *o, const ml_bench_bw *bw, ml_rng *rng) {
    int rc = ML_EXIT_OK;
    if (o->model_path) {
        for (int t = 0; t < o->n_threads && !rc; t++) rc = bench_model(o, bw, o->model_path, NULL, 0, o->threads[t]);
        return rc;
    }
    for (int k = 0; k < ML_BENCH_N_SHAPES && !rc; k++)
        if (!strcmp(o->shape, "all") || !strcmp(o->shape, ml_bench_shapes[k].name))
            for (int w = 0; w < o->n_wtypes && !rc; w++) rc = bench_shape(o, bw, &ml_bench_shapes[k], o->wtypes[w], rng);
    return rc;
}
