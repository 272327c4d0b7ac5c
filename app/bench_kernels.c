/* ml_bench's kernel figures, single thread: matvec GB/s and GOPS at the
 * matrix shapes of real models (through the op layer's dispatch by weight
 * type), matmul GOPS for a prompt batch at the same shapes, and the float
 * kernels at model widths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/bench.h"
#include "core/mem.h"
#include "core/pack.h"
#include "app/exit_codes.h"
#include "config/ml_config.h"
#include "ops/ops.h"

/* ---- matvec --------------------------------------------------------------- */

typedef struct { const char *model; int rows, cols; const char *what; } mv_shape;

static const mv_shape mv_shapes[] = {
    {"stories15M", 288, 288, "wq/wo"},  {"stories15M", 768, 288, "w1/w3"},
    {"stories15M", 288, 768, "w2"},     {"stories15M", 32000, 288, "classifier"},
    {"stories110M", 768, 768, "wq/wo"}, {"stories110M", 2048, 768, "w1/w3"},
    {"stories110M", 768, 2048, "w2"},   {"stories110M", 32000, 768, "classifier"},
    {"tinyllama", 2048, 2048, "wq/wo"}, {"tinyllama", 256, 2048, "wk/wv"},
    {"tinyllama", 5632, 2048, "w1/w3"}, {"tinyllama", 2048, 5632, "w2"},
    {"tinyllama", 32000, 2048, "classifier"},
};

/* Tokens of the matmul figure's batch (a prompt, as llama-bench -p). */
#define MM_TOKENS 64

typedef struct { ml_ops *ops; float *y; ml_qtensor W; ml_qact x; ml_qbatch X; } mv_ctx;

static void run_matvec(void *c) {
    mv_ctx *m = c;
    ml_op_matvec(m->ops, m->y, &m->W, &m->x);
}

static void run_matmul(void *c) {
    mv_ctx *m = c;
    const int f16 = m->W.stype == ML_TYPE_F16;
    if (m->W.type == ML_TYPE_Q8_0) (f16 ? ml_k_matmul_q8_f16 : ml_k_matmul_q8)(m->y, m->W.rows, &m->W, &m->X, 0, m->W.rows);
    else (f16 ? ml_k_matmul_q4_f16 : ml_k_matmul_q4)(m->y, m->W.rows, &m->W, &m->X, 0, m->W.rows);
}

/* W in the layout this build's kernels read fastest (core/pack.h), as the
 * loader lays out the weights it reads. */
static int lay_out(ml_qtensor *W) {
    if (ml_op_weight_layout(W) != ML_LAYOUT_R16) return ML_EXIT_OK;
    void *scratch = malloc(ml_pack_r16_scratch(W));
    if (!scratch) {
        fprintf(stderr, "ml_bench: out of memory for %dx%d\n", W->rows, W->cols);
        return ML_EXIT_FAIL;
    }
    ml_pack_r16(W, scratch);
    free(scratch);
    return ML_EXIT_OK;
}

static int bench_one_matvec(const ml_bench_opts *o, ml_ops *ops, const mv_shape *s, int wtype, ml_rng *rng) {
    const ml_type st = o->f16_scales ? ML_TYPE_F16 : ML_TYPE_F32;
    const char *tn = st == ML_TYPE_F16 ? (wtype == ML_TYPE_Q8_0 ? "q8_0_f16" : "q4_0_f16")
                                       : (wtype == ML_TYPE_Q8_0 ? "q8_0" : "q4_0");
    size_t n = (size_t)s->rows * s->cols, qb = (size_t)ml_quant_bytes(wtype, n), db = n / ML_QK * ml_scale_bytes(st);
    mv_ctx c = {
        .ops = ops,
        .y = ml_large_alloc((size_t)s->rows * MM_TOKENS * 4),
        .W = {.q = ml_large_alloc(qb), .d = ml_large_alloc(db), .rows = s->rows, .cols = s->cols, .type = (uint8_t)wtype,
              .stype = (uint8_t)st},
        .x = {.q = ml_large_alloc((size_t)s->cols), .d = ml_large_alloc((size_t)s->cols / ML_QK * 4), .n = s->cols},
        .X = {.q = ml_large_alloc((size_t)s->cols * MM_TOKENS), .d = ml_large_alloc((size_t)s->cols / ML_QK * 4 * MM_TOKENS),
              .n = s->cols, .n_tok = MM_TOKENS},
    };
    int rc = ML_EXIT_OK;
    if (!c.y || !c.W.q || !c.W.d || !c.x.q || !c.x.d || !c.X.q || !c.X.d) {
        fprintf(stderr, "ml_bench: out of memory for %dx%d\n", s->rows, s->cols);
        rc = ML_EXIT_FAIL;
    } else {
        ml_rng_quants(rng, c.W.q, qb, wtype);
        if (st == ML_TYPE_F16) /* the same draw, rounded to fp16 */
            for (size_t i = 0; i < n / ML_QK; i++) {
                float v;
                ml_rng_floats(rng, &v, 1, 1e-3f, 2e-3f);
                c.W.dh[i] = ml_f32_to_f16(v);
            }
        else
            ml_rng_floats(rng, c.W.d, n / ML_QK, 1e-3f, 2e-3f);
        ml_rng_quants(rng, c.x.q, (size_t)s->cols, ML_TYPE_Q8_0);
        ml_rng_floats(rng, c.x.d, (size_t)s->cols / ML_QK, 1e-2f, 2e-2f);
        rc = lay_out(&c.W); /* as the loader would */
    }
    if (!rc) {
        double t[64];
        ml_bench_progress("matvec_%s %dx%d (%d runs)", tn, s->rows, s->cols, o->reps);
        for (int r = 0; r < o->reps; r++) t[r] = ml_bench_time_call(run_matvec, &c);
        ml_bench_progress(NULL);
        ml_bench_stats st = ml_bench_summarize(t, o->reps);
        double bytes = (double)(qb + db);
        printf("  matvec_%s %-11s %-10s %5dx%-5d %8.2f us  %7.1f GB/s  %7.1f GOPS  (%.1f-%.1f GB/s)\n", tn,
               s->model, s->what, s->rows, s->cols, st.med * 1e6, bytes / st.med / 1e9,
               2.0 * (double)n / st.med / 1e9, bytes / st.hi / 1e9, bytes / st.lo / 1e9);
        if (o->rows) printf("#row kernel %s matvec_%s_%dx%d %.3f\n", ML_ISA_NAME, tn, s->rows, s->cols, bytes / st.med / 1e9);

        ml_rng_quants(rng, c.X.q, (size_t)s->cols * MM_TOKENS, ML_TYPE_Q8_0);
        ml_rng_floats(rng, c.X.d, (size_t)s->cols / ML_QK * MM_TOKENS, 1e-2f, 2e-2f);
        ml_bench_progress("matmul_%s %dx%d (%d runs)", tn, s->rows, s->cols, o->reps);
        for (int r = 0; r < o->reps; r++) t[r] = ml_bench_time_call(run_matmul, &c);
        ml_bench_progress(NULL);
        st = ml_bench_summarize(t, o->reps);
        double ops = 2.0 * (double)n * MM_TOKENS;
        printf("  matmul_%s %-11s %-10s %5dx%-5d %8.2f us  %d tokens  %7.1f GOPS  (%.1f-%.1f GOPS)\n", tn, s->model,
               s->what, s->rows, s->cols, st.med * 1e6, MM_TOKENS, ops / st.med / 1e9, ops / st.hi / 1e9,
               ops / st.lo / 1e9);
        if (o->rows) printf("#row kernel %s matmul_%s_%dx%d %.3f\n", ML_ISA_NAME, tn, s->rows, s->cols, ops / st.med / 1e9);
    }
    ml_aligned_free(c.y), ml_aligned_free(c.W.q), ml_aligned_free(c.W.d), ml_aligned_free(c.x.q), ml_aligned_free(c.x.d);
    ml_aligned_free(c.X.q), ml_aligned_free(c.X.d);
    return rc;
}

int ml_bench_matvecs(const ml_bench_opts *o, int wtype, ml_rng *rng) {
    ml_ops ops;
    ml_err err;
    if (ml_ops_init(&ops, 1, &err)) {
        fprintf(stderr, "ml_bench: %s\n", err.msg);
        return ML_EXIT_FAIL;
    }
    int rc = ML_EXIT_OK;
    for (size_t i = 0; i < sizeof mv_shapes / sizeof *mv_shapes && !rc; i++)
        if (!strcmp(o->shape, "all") || !strcmp(o->shape, mv_shapes[i].model))
            rc = bench_one_matvec(o, &ops, &mv_shapes[i], wtype, rng);
    ml_ops_free(&ops);
    return rc;
}

/* ---- float kernels -------------------------------------------------------- */

typedef struct { float *a, *b, *c; ml_qact qa; int n; } vec_ctx;

/* How each kernel of the list is timed here: one call on v's buffers, n
 * floats wide; vocab: also at the vocabulary's width (32000). The matvecs and
 * matmuls have no call here (NULL): they are timed above, at model shapes;
 * nor has dequant_row (one embedding row per token: nothing to time). */
typedef struct { void (*run)(vec_ctx *v); int vocab; } vec_call;

#define ROPE_HD 32 /* head_dim: every width below is a multiple */
static void run_quantize_q8(vec_ctx *v) { ml_k_quantize_q8(&v->qa, v->a, v->n); }
static void run_rmsnorm(vec_ctx *v) { ml_k_rmsnorm(v->c, v->a, v->b, v->n, 1e-5f); }
static void run_softmax(vec_ctx *v) { memcpy(v->c, v->a, (size_t)v->n * 4); ml_k_softmax(v->c, v->n); }
static void run_rope(vec_ctx *v) {  /* cos and sin in [-1, 1]: b's first two half-heads */
    memcpy(v->c, v->a, (size_t)v->n * 4);
    ml_k_rope(v->c, NULL, v->b, v->b + ROPE_HD / 2, ROPE_HD, v->n / ROPE_HD, v->n / ROPE_HD);
}
static void run_silu_mul(vec_ctx *v) { memcpy(v->c, v->a, (size_t)v->n * 4); ml_k_silu_mul(v->c, v->b, v->n); }
static void run_add(vec_ctx *v) { ml_k_add(v->c, v->a, v->n); }
static void run_dot_f32(vec_ctx *v) { v->c[0] += ml_k_dot_f32(v->a, v->b, v->n); }
static void run_axpy_f32(vec_ctx *v) { ml_k_axpy_f32(v->c, 0.5f, v->a, v->n); }

/* Attention at head size ROPE_HD for a group of ATT_G query heads: n / ROPE_HD
 * keys (a), the queries or weights in b, the scores or outputs in c. */
#define ATT_G 4
static void run_attn_scores(vec_ctx *v) {
    ml_k_attn_scores(v->c, v->n / ROPE_HD, v->b, ROPE_HD, ATT_G, v->a, ROPE_HD, v->n / ROPE_HD, ROPE_HD, 5.6f);
}
static void run_attn_values(vec_ctx *v) {
    ml_k_attn_values(v->c, ROPE_HD, v->b, v->n / ROPE_HD, ATT_G, v->a, ROPE_HD, v->n / ROPE_HD, ROPE_HD);
}

static const vec_call bench_matvec_q8 = {NULL, 0}, bench_matvec_q4 = {NULL, 0};
static const vec_call bench_matmul_q8 = {NULL, 0}, bench_matmul_q4 = {NULL, 0};
static const vec_call bench_dequant_row_q8 = {NULL, 0}, bench_dequant_row_q4 = {NULL, 0};
static const vec_call bench_matvec_q8_f16 = {NULL, 0}, bench_matvec_q4_f16 = {NULL, 0};
static const vec_call bench_matmul_q8_f16 = {NULL, 0}, bench_matmul_q4_f16 = {NULL, 0};
static const vec_call bench_dequant_row_q8_f16 = {NULL, 0}, bench_dequant_row_q4_f16 = {NULL, 0};
static const vec_call bench_weight_layout = {NULL, 0}; /* a constant: nothing to time */
static const vec_call bench_quantize_q8 = {run_quantize_q8, 0}, bench_rmsnorm = {run_rmsnorm, 0};
static const vec_call bench_softmax = {run_softmax, 1}, bench_rope = {run_rope, 0};
static const vec_call bench_silu_mul = {run_silu_mul, 0}, bench_add = {run_add, 0};
static const vec_call bench_dot_f32 = {run_dot_f32, 1}, bench_axpy_f32 = {run_axpy_f32, 1};
static const vec_call bench_attn_scores = {run_attn_scores, 1}, bench_attn_values = {run_attn_values, 1};

/* The table is the kernel list (config/ml_kernels.h): a new kernel does not
 * compile here until it says how it is timed. */
#define VEC_ROW(ret, name, NAME, params) {#name, &bench_##name},
static const struct { const char *name; const vec_call *call; } vec_kernels[] = {ML_KERNELS(VEC_ROW)};

typedef struct { vec_ctx v; void (*run)(vec_ctx *v); } vec_timed;

static void run_vec(void *p) {
    vec_timed *t = p;
    t->run(&t->v);
}

int ml_bench_vectors(const ml_bench_opts *o, ml_rng *rng) {
    static const int sizes[] = {288, 2048, 5632, 32000};
    for (size_t w = 0; w < sizeof vec_kernels / sizeof *vec_kernels; w++)
        for (int k = 0; k < 4; k++) {
            int n = sizes[k];
            const vec_call *c = vec_kernels[w].call;
            if (!c->run || (n == 32000 && !c->vocab)) continue; /* not a width this runs at */
            vec_timed t = {{ml_large_alloc((size_t)n * 4), ml_large_alloc((size_t)n * 4), ml_large_alloc((size_t)n * 4),
                            {ml_large_alloc((size_t)n), ml_large_alloc((size_t)n / ML_QK * 4), n}, n}, c->run};
            vec_ctx *v = &t.v;
            int ok = v->a && v->b && v->c && v->qa.q && v->qa.d;
            if (ok) {
                ml_rng_floats(rng, v->a, (size_t)n, -4.0f, 4.0f);
                ml_rng_floats(rng, v->b, (size_t)n, -1.0f, 1.0f);
                ml_rng_floats(rng, v->c, (size_t)n, -1.0f, 1.0f);
                double tm[64];
                for (int r = 0; r < o->reps; r++) tm[r] = ml_bench_time_call(run_vec, &t);
                ml_bench_stats st = ml_bench_summarize(tm, o->reps);
                printf("  %-12s n=%-6d %9.3f us  %7.2f Gelem/s\n", vec_kernels[w].name, n, st.med * 1e6, n / st.med / 1e9);
            }
            ml_aligned_free(v->a), ml_aligned_free(v->b), ml_aligned_free(v->c), ml_aligned_free(v->qa.q), ml_aligned_free(v->qa.d);
            if (!ok) {
                fprintf(stderr, "ml_bench: out of memory for %s n=%d\n", vec_kernels[w].name, n);
                return ML_EXIT_FAIL;
            }
        }
    return ML_EXIT_OK;
}
