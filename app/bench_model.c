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
#include "core/status.h"
#include "include/legacy_ml.h"
#include "model/sampler.h" /* ml_argmax */

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
static double decode_seconds(lml_model *m, const lml_model_info *info, int pos0, int tokens) {
    int token = 1;
    double t0 = ml_cli_now();
    for (int pos = pos0; pos < pos0 + tokens; pos++) {
        if (lml_eval(m, &token, 1, pos, NULL, NULL, NULL)) return -1;
        token = ml_argmax(lml_logits(m), info->vocab);
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
static double prompt_seconds(lml_model *m, const int *tokens, int n) {
    double t0 = ml_cli_now();
    if (lml_eval(m, tokens, n, 0, NULL, NULL, NULL)) return -1;
    return ml_cli_now() - t0;
}

/* Speculative decoding's bound (model/speculate.h): batches of k tokens
 * with every token's logits, as a verification runs them, over the decode
 * figure's positions (pos0 .. pos0 + n - 1: from -d, so that the batch
 * meets the context the decode step did); seconds per batch. */
static int ignore_logits(void *ud, int pos, const float *logits, int vocab) {
    (void)ud, (void)pos, (void)logits, (void)vocab;
    return 0;
}

static double verify_seconds(lml_model *m, const int *tokens, int pos0, int n, int k) {
    int batches = 0;
    double t0 = ml_cli_now();
    for (int i = 0; i + k <= n; i += k, batches++)
        if (lml_eval(m, tokens + i, k, pos0 + i, ignore_logits, NULL, NULL)) return -1;
    return batches ? (ml_cli_now() - t0) / batches : -1;
}

/* k = 2, 4, 8 beside one decode step (step_s, of the n tokens decoded from
 * pos0): their cost ratio, and #row lines. */
static int bench_verify(const ml_bench_opts *o, lml_model *m, const lml_model_info *info, int pos0, int n,
                        double step_s, const char *label, const char *tn, int nth) {
    static const int ks[] = {2, 4, 8};
    enum { NK = sizeof ks / sizeof *ks };
    double med[NK];
    int *tokens = prompt_tokens(n, info->vocab);
    if (!tokens) return ML_EXIT_FAIL;
    for (int j = 0; j < NK; j++) {
        double t[64];
        med[j] = 0;
        if (ks[j] > info->batch || ks[j] > n) continue;
        verify_seconds(m, tokens, pos0, ks[j], ks[j]); /* warm */
        for (int r = 0; r < o->reps; r++) t[r] = verify_seconds(m, tokens, pos0, n, ks[j]);
        ml_bench_stats st = ml_bench_summarize(t, o->reps);
        if (st.lo < 0) {
            fprintf(stderr, "ml_bench: %s: the verification batch failed\n", label);
            free(tokens);
            return ML_EXIT_FAIL;
        }
        med[j] = st.med;
    }
    free(tokens);
    printf("  %-12s %s  %dT  verify k tokens (one batch, every logit) / a decode step:", label, tn, nth);
    for (int j = 0; j < NK; j++)
        if (med[j] > 0) printf("  k=%d %.3f ms = %.2fx", ks[j], med[j] * 1e3, med[j] / step_s);
    printf("\n");
    for (int j = 0; j < NK && o->rows; j++)
        if (med[j] > 0) printf("#row verify%d %s %s_%s_%dT %.3f\n", ks[j], ML_ISA_NAME, label, tn, nth, med[j] / step_s);
    return ML_EXIT_OK;
}

/* The prompt figure and its #row line, beside the decode figure. */
static int bench_prompt(const ml_bench_opts *o, lml_model *m, const lml_model_info *info, const char *label,
                        const char *tn, int nth) {
    int n = o->prompt < info->context ? o->prompt : info->context;
    int *tokens = prompt_tokens(n, info->vocab);
    if (!tokens) return ML_EXIT_FAIL;
    prompt_seconds(m, tokens, n < 8 ? n : 8); /* warm caches */
    double t[64];
    ml_bench_progress("%s %s %dT: a %d-token prompt (%d runs)", label, tn, nth, n, o->reps);
    for (int r = 0; r < o->reps; r++) t[r] = prompt_seconds(m, tokens, n);
    ml_bench_progress(NULL);
    ml_bench_stats st = ml_bench_summarize(t, o->reps);
    free(tokens);
    if (st.lo < 0) {
        fprintf(stderr, "ml_bench: %s: the prompt failed\n", label);
        return ML_EXIT_FAIL;
    }
    printf("  %-12s %s  %dT  %8.1f tok/s  pp%d, -b %d  (%.1f-%.1f tok/s)\n", label, tn, nth, n / st.med, n,
           info->batch, n / st.hi, n / st.lo);
    if (o->rows) printf("#row pp%d %s %s_%s_%dT %.2f\n", n, ML_ISA_NAME, label, tn, nth, n / st.med);
    return ML_EXIT_OK;
}

static int bench_model(const ml_bench_opts *o, const ml_bench_bw *bw, const char *label, const void *data,
                       size_t size, int nth) {
    lml_model *m;
    lml_error err = {{0}};
    /* all_logits: the verification figure wants every row's logits. The
     * context is what the runs reach, and at least a batch (the model caps
     * it at its own; a batch is capped at the context). */
    int reach = o->depth + o->tokens;
    if (reach < o->prompt) reach = o->prompt;
    if (reach < o->batch) reach = o->batch;
    lml_model_options oo = {.load = data ? LML_LOAD_TAKE : ml_cli_load_mode(o->use_mmap), .threads = nth,
                            .context = reach, .batch = o->batch, .all_logits = 1};
    double t_open = ml_cli_now();
    lml_status s = data ? lml_model_open_memory(&m, data, size, &oo, &err) : lml_model_open(&m, o->model_path, &oo, &err);
    if (s) {
        fprintf(stderr, "ml_bench: %s: %s (%s)\n", label, err.message, ml_status_name((ml_status)s));
        return ML_EXIT_FAIL;
    }
    t_open = ml_cli_now() - t_open;
    lml_model_info info;
    lml_model_get_info(m, &info);
    /* The context (-d) is filled once, untimed: each run decodes over the
     * same positions from there, and the cache below them stays valid. */
    int depth = o->depth;
    if (depth >= info.context) {
        fprintf(stderr, "ml_bench: %s: -d %d: expected a context below the model's %d positions\n", label, depth,
                info.context);
        lml_model_close(m);
        return ML_EXIT_FAIL;
    }
    int tokens = o->tokens < info.context - depth ? o->tokens : info.context - depth;
    if (tokens < o->tokens)
        printf("  %s: %d tokens decoded, not %d: the context ends at %d\n", label, tokens, o->tokens, info.context);
    if (depth) {
        int *ctx = prompt_tokens(depth, info.vocab);
        s = ctx ? lml_eval(m, ctx, depth, 0, NULL, NULL, &err) : LML_E_NOMEM;
        free(ctx);
        if (s) {
            fprintf(stderr, "ml_bench: %s: the %d-token context failed: %s\n", label, depth, ctx ? err.message : "");
            lml_model_close(m);
            return ML_EXIT_FAIL;
        }
    }
    /* Bytes of weights one token streams: every matrix once, plus one embedding row. */
    double per_tok = (double)info.decode_bytes;
    const char *tn = info.f16_scales ? (!strcmp(info.weights, "Q8_0") ? "q8_0_f16" : "q4_0_f16")
                                     : (!strcmp(info.weights, "Q8_0") ? "q8_0" : "q4_0");
    ml_bench_progress("%s %s %dT: %d tokens decoded (%d runs)", label, tn, nth, tokens, o->reps);
    decode_seconds(m, &info, depth, tokens < 8 ? tokens : 8); /* warm caches and page in */
    double t[64];
    for (int r = 0; r < o->reps; r++) t[r] = decode_seconds(m, &info, depth, tokens);
    ml_bench_progress(NULL);
    ml_bench_stats st = ml_bench_summarize(t, o->reps);
    double tps = tokens / st.med;
    printf("  %-12s %s  %dT  %8.1f tok/s  %7.3f ms/token  %6.1f GB/s  RSS %6.1f MiB  (%.1f-%.1f tok/s; weights %s,"
           " opened in %.0f ms, peak RSS %.1f MiB)\n",
           label, tn, nth, tps, 1e3 / tps, per_tok * tps / 1e9, status_kib("VmRSS:") / 1024.0,
           tokens / st.hi, tokens / st.lo, info.storage, t_open * 1e3, status_kib("VmHWM:") / 1024.0);
    if (o->bw) {
        ml_bench_progress("the read bandwidth, %dT (%d runs)", nth, o->reps);
        double med, peak = ml_bench_read_bandwidth(bw, o->reps, nth, &med);
        ml_bench_progress(NULL);
        if (peak > 0) {
            printf("  %-12s %s  %dT  %5.1f%% of the read bandwidth measured next: %.1f GB/s (median %.1f)\n", label,
                   tn, nth, 100.0 * per_tok * tps / 1e9 / peak, peak, med);
            if (o->rows) printf("#row bw %s %s_%s_%dT %.2f\n", ML_ISA_NAME, label, tn, nth, peak);
        } else
            printf("  %-12s read bandwidth not measured: no memory for its 1 GiB buffer\n", label);
    }
    if (o->rows && depth) /* tg at depth: its own row, never mistaken for tg from position 0 */
        printf("#row tg%d@d%d %s %s_%s_%dT %.2f\n", tokens, depth, ML_ISA_NAME, label, tn, nth, tps);
    else if (o->rows)
        printf("#row model %s %s_%s_%dT %.2f\n", ML_ISA_NAME, label, tn, nth, tps);
    /* -p: the prompt figure, then the verification's over the decode's positions */
    int rc = o->prompt ? bench_prompt(o, m, &info, label, tn, nth) : ML_EXIT_OK;
    if (o->prompt && rc == ML_EXIT_OK) rc = bench_verify(o, m, &info, depth, tokens, st.med / tokens, label, tn, nth);
    fflush(stdout);
    lml_model_close(m);
    return rc;
}

/* A named shape's .mlb image with random weights (model/mlb_random.h), in a
 * buffer handed over to the model (LML_LOAD_TAKE), which decodes from it in
 * place as from a file it reads: filled again, the same bytes, for each
 * thread count's model. */
static int bench_shape(const ml_bench_opts *o, const ml_bench_bw *bw, const ml_bench_shape *s, int wtype,
                       ml_rng *rng) {
    ml_mlb_header h = ml_mlb_make_header((uint32_t)s->dim, (uint32_t)s->n_layers, (uint32_t)s->n_heads,
                                         (uint32_t)s->n_kv_heads, (uint32_t)s->hidden_dim, (uint32_t)s->vocab,
                                         (uint32_t)s->max_seq, (uint32_t)wtype, (uint32_t)s->shared_classifier);
    if (s->head_dim || s->flags || s->llama3) { /* today's models: a version-2 header */
        h.version = ML_MLB_VERSION_2, h.head_dim = (uint32_t)s->head_dim, h.flags = (uint32_t)s->flags;
        h.bos = h.eos = h.eot = -1;
        if (s->llama3) {
            h.rope_theta = 500000.0f, h.rope_scaling = ML_MLB_ROPE_LLAMA3, h.rope_factor = 32.0f;
            h.rope_low_freq_factor = 1.0f, h.rope_high_freq_factor = 4.0f, h.rope_orig_max_seq = 8192;
        }
    }
    if (o->f16_scales) ml_mlb_header_f16_scales(&h);
    size_t size = (size_t)ml_mlb_random_bytes(&h);
    unsigned char *img = ml_large_alloc(size);
    if (!img) {
        fprintf(stderr, "ml_bench: out of memory building %s\n", s->name);
        return ML_EXIT_FAIL;
    }
    const uint64_t seed = ml_rng_next(rng);
    int rc = ML_EXIT_OK;
    for (int t = 0; t < o->n_threads && !rc; t++) {
        ml_mlb_random_fill(img, &h, seed);
        rc = bench_model(o, bw, s->name, img, size, o->threads[t]);
    }
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
