#include "ops/ops.h"

#include <math.h>
#include <string.h>

#include "config/ml_config.h"

ml_status ml_ops_init(ml_ops *o, int n_threads, ml_err *err) {
    o->n_threads = n_threads;
    return ml_pool_create(&o->pool, n_threads, err);
}

void ml_ops_free(ml_ops *o) {
    ml_pool_destroy(o->pool);
    o->pool = NULL;
}

/* Matvec work items (core/threads.h) are groups of ROWS_PER_ITEM rows: a
 * multiple of 4, so the kernels' 4-row groups are the same whoever runs an
 * item, and of 16, one AVX-512 register of rows and the groups of a matrix
 * in ML_LAYOUT_R16 (core/pack.h), whose kernels take ranges that start (and
 * end, but at the last row) on a group. */
#define ROWS_PER_ITEM 16
_Static_assert(ROWS_PER_ITEM % 16 == 0, "a work item is whole 16-row groups");

static int row_items(int rows) { return (rows + ROWS_PER_ITEM - 1) / ROWS_PER_ITEM; }

/* The rows [r0, r1) of items [i0, i1) of a matrix of `rows` rows. */
static void item_rows(int rows, int i0, int i1, int *r0, int *r1) {
    *r0 = i0 * ROWS_PER_ITEM;
    *r1 = i1 * ROWS_PER_ITEM < rows ? i1 * ROWS_PER_ITEM : rows;
}

/* ---- weight types: one row per type the ops can run -------------------- */

/* The row-range matvec and matmul and the row dequantizer of each weight type, indexed
 * by ml_type (ggml's type-traits table): a type without a row has no kernel,
 * so it can never run another format's kernel over its bytes. */
typedef void (*matvec_fn)(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1);
typedef void (*matmul_fn)(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1);
typedef void (*dequant_row_fn)(float *out, const ml_qtensor *W, int row);

typedef struct {
    matvec_fn matvec;
    matmul_fn matmul;
    dequant_row_fn dequant_row;
} weight_kernels;

/* [weight type][scale type]: fp32 scales (ML_TYPE_F32) or fp16 (ML_TYPE_F16) */
static const weight_kernels weight_types[][2] = {
    [ML_TYPE_Q4_0] = {[ML_TYPE_F32] = {ml_k_matvec_q4, ml_k_matmul_q4, ml_k_dequant_row_q4},
                      [ML_TYPE_F16] = {ml_k_matvec_q4_f16, ml_k_matmul_q4_f16, ml_k_dequant_row_q4_f16}},
    [ML_TYPE_Q8_0] = {[ML_TYPE_F32] = {ml_k_matvec_q8, ml_k_matmul_q8, ml_k_dequant_row_q8},
                      [ML_TYPE_F16] = {ml_k_matvec_q8_f16, ml_k_matmul_q8_f16, ml_k_dequant_row_q8_f16}},
};

int ml_op_type_supported(int type) {
    return type >= 0 && type < (int)(sizeof weight_types / sizeof *weight_types) && weight_types[type][0].matvec;
}

/* W's kernels, or NULL for a weight or scale type without them. */
static const weight_kernels *kernels_of(const ml_qtensor *W) {
    if (!ml_op_type_supported(W->type) || (W->stype != ML_TYPE_F32 && W->stype != ML_TYPE_F16)) return NULL;
    return &weight_types[W->type][W->stype];
}

/* Outside the contract (a type the loader would have refused): NaN, which
 * ml_forward's finiteness checks report, rather than numbers from bytes of
 * another format. */
static void fill_nan(float *y, int n) {
    for (int i = 0; i < n; i++) y[i] = NAN;
}

static void matvec_rows(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    if (r0 >= r1) return;
    const weight_kernels *k = kernels_of(W);
    if (k) k->matvec(y, W, x, r0, r1);
    else fill_nan(y + r0, r1 - r0);
}

/* One token is the matvec (a decode step): the matmul would give the same
 * bits (ops.h), through its tiles, for nothing. */
static void matmul_rows(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    if (X->n_tok == 1) {
        ml_qact x = ml_qbatch_token(X, 0);
        matvec_rows(Y, W, &x, r0, r1);
        return;
    }
    if (r0 >= r1) return;
    const weight_kernels *k = kernels_of(W);
    if (k) k->matmul(Y, ldy, W, X, r0, r1);
    else
        for (int t = 0; t < X->n_tok; t++) fill_nan(Y + (size_t)t * (size_t)ldy + r0, r1 - r0);
}

/* ---- several matrices against the same activations ---------------------- */

/* A region of matvec jobs (x) or matmul jobs (X): one walk over the items
 * serves both. */
typedef struct {
    const ml_matvec_job *mv;
    const ml_matmul_job *mm;
    int n_jobs;
    const ml_qact *x;
    const ml_qbatch *X;
} jobs_task;

static const ml_qtensor *job_matrix(const jobs_task *t, int j) { return t->mv ? t->mv[j].W : t->mm[j].W; }

static void job_rows(const jobs_task *t, int j, int r0, int r1) {
    if (t->mv) matvec_rows(t->mv[j].y, t->mv[j].W, t->x, r0, r1);
    else matmul_rows(t->mm[j].Y, t->mm[j].ldy, t->mm[j].W, t->X, r0, r1);
}

/* The items of a region are its jobs' items one job after the other; a
 * range may span several jobs. */
static void jobs_run(void *ctx, int i0, int i1) {
    const jobs_task *t = ctx;
    for (int j = 0, base = 0; j < t->n_jobs && base < i1; j++) {
        int rows = job_matrix(t, j)->rows, n = row_items(rows);
        int a = i0 > base ? i0 - base : 0, b = i1 - base < n ? i1 - base : n;
        if (a < b) {
            int r0, r1;
            item_rows(rows, a, b, &r0, &r1);
            job_rows(t, j, r0, r1);
        }
        base += n;
    }
}

static void jobs_region(ml_ops *o, const jobs_task *t) {
    int n = 0;
    for (int j = 0; j < t->n_jobs; j++) n += row_items(job_matrix(t, j)->rows);
    ml_pool_run(o->pool, jobs_run, (void *)t, n);
}

void ml_op_matvecs(ml_ops *o, const ml_matvec_job *jobs, int n_jobs, const ml_qact *x) {
    jobs_task t = {.mv = jobs, .n_jobs = n_jobs, .x = x};
    jobs_region(o, &t);
}

void ml_op_matmuls(ml_ops *o, const ml_matmul_job *jobs, int n_jobs, const ml_qbatch *X) {
    jobs_task t = {.mm = jobs, .n_jobs = n_jobs, .X = X};
    jobs_region(o, &t);
}

void ml_op_matvec(ml_ops *o, float *y, const ml_qtensor *W, const ml_qact *x) {
    ml_matvec_job job = {y, W};
    ml_op_matvecs(o, &job, 1, x);
}

/* ---- SwiGLU up-projection ----------------------------------------------- */

/* One token (x) or a batch (X, outputs (n_tok, W1->rows)). */
typedef struct {
    float *g, *u;
    const ml_qtensor *W1, *W3;
    const ml_qact *x;
    const ml_qbatch *X;
} gate_up_task;

static void gate_up_run(void *ctx, int i0, int i1) {
    const gate_up_task *t = ctx;
    int r0, r1, ld = t->W1->rows;
    item_rows(ld, i0, i1, &r0, &r1);
    if (r1 <= r0) return;
    if (!t->X) {
        matvec_rows(t->g, t->W1, t->x, r0, r1);
        matvec_rows(t->u, t->W3, t->x, r0, r1);
        ml_k_silu_mul(t->g + r0, t->u + r0, r1 - r0);
        return;
    }
    matmul_rows(t->g, ld, t->W1, t->X, r0, r1);
    matmul_rows(t->u, ld, t->W3, t->X, r0, r1);
    for (int k = 0; k < t->X->n_tok; k++) {
        size_t at = (size_t)k * (size_t)ld + (size_t)r0;
        ml_k_silu_mul(t->g + at, t->u + at, r1 - r0);
    }
}

void ml_op_gate_up(ml_ops *o, float *g, float *u, const ml_qtensor *W1, const ml_qtensor *W3,
                   const ml_qact *x) {
    gate_up_task t = {g, u, W1, W3, x, NULL};
    ml_pool_run(o->pool, gate_up_run, &t, row_items(W1->rows));
}

void ml_op_gate_up_batch(ml_ops *o, float *G, float *U, const ml_qtensor *W1, const ml_qtensor *W3,
                         const ml_qbatch *X) {
    gate_up_task t = {G, U, W1, W3, NULL, X};
    ml_pool_run(o->pool, gate_up_run, &t, row_items(W1->rows));
}

/* ---- single-threaded helpers ------------------------------------------- */

void ml_op_quantize(ml_qact *out, const float *x, int k) {
    out->n = k;
    ml_k_quantize_q8(out, x, k);
}

/* ---- per-token norm and quantization of a batch, split by token --------- */

typedef struct {
    ml_qbatch *out;
    const float *x, *norm_w;
    float *normed;
    float eps;
    float *xw;        /* ml_op_add_quantize_batch: x, written */
    const float *add; /* and what is added to it first */
} quantize_task;

static void quantize_run(void *ctx, int t0, int t1) {
    const quantize_task *t = ctx;
    size_t k = (size_t)t->out->n;
    for (int i = t0; i < t1; i++) {
        const float *src = t->x + (size_t)i * k;
        if (t->add) ml_k_add(t->xw + (size_t)i * k, t->add + (size_t)i * k, (int)k);
        if (t->norm_w) {
            ml_k_rmsnorm(t->normed + (size_t)i * k, src, t->norm_w, (int)k, t->eps);
            src = t->normed + (size_t)i * k;
        }
        ml_qact q = ml_qbatch_token(t->out, i);
        ml_k_quantize_q8(&q, src, (int)k);
    }
}

void ml_op_quantize_batch(ml_ops *o, ml_qbatch *out, const float *x, int k, int n_tok, const float *norm_w,
                          float eps, float *normed) {
    out->n = k;
    out->n_tok = n_tok;
    quantize_task t = {out, x, norm_w, normed, eps, NULL, NULL};
    ml_pool_run(o->pool, quantize_run, &t, n_tok);
}

void ml_op_add_quantize_batch(ml_ops *o, ml_qbatch *out, float *x, const float *add, int k, int n_tok,
                              const float *norm_w, float eps, float *normed) {
    out->n = k;
    out->n_tok = n_tok;
    quantize_task t = {out, x, norm_w, normed, eps, x, add};
    ml_pool_run(o->pool, quantize_run, &t, n_tok);
}

int ml_op_weight_layout(const ml_qtensor *W) {
    return kernels_of(W) && W->rows >= 16 ? ml_k_weight_layout(W->type, W->stype) : ML_LAYOUT_ROWS;
}

void ml_op_dequant_row(float *out, const ml_qtensor *W, int row) {
    const weight_kernels *k = W->layout == ML_LAYOUT_ROWS ? kernels_of(W) : NULL; /* rows are read row-major */
    if (k) k->dequant_row(out, W, row);
    else fill_nan(out, W->cols);
}

/* ---- element-wise and per-token float ops ------------------------------- */

/* The per-token float ops of a batch are regions split by token too: run
 * by one thread between two regions, they would leave the others idle
 * (and waiting to be woken). */
typedef struct {
    float *Y;
    const float *X;
    int n;
} add_task;

static void add_run(void *ctx, int t0, int t1) {
    const add_task *t = ctx;
    for (int i = t0; i < t1; i++) ml_k_add(t->Y + (size_t)i * (size_t)t->n, t->X + (size_t)i * (size_t)t->n, t->n);
}

void ml_op_add(ml_ops *o, float *Y, const float *X, int n, int n_tok) {
    add_task t = {Y, X, n};
    ml_pool_run(o->pool, add_run, &t, n_tok);
}

void ml_op_add_bias(float *Y, const float *b, int n, int n_tok) {
    for (int t = 0; t < n_tok; t++) ml_k_add(Y + (size_t)t * (size_t)n, b, n);
}

void ml_op_head_norm(float *X, const float *w, int head_dim, int n_heads, int n_tok, float eps) {
    size_t n = (size_t)n_tok * (size_t)n_heads;
    for (size_t i = 0; i < n; i++) ml_k_rmsnorm(X + i * (size_t)head_dim, X + i * (size_t)head_dim, w, head_dim, eps);
}

typedef struct {
    float *Q, *K;
    int pos0;
    const ml_rope_args *r;
} rope_task;

static void rope_run(void *ctx, int t0, int t1) {
    const rope_task *k = ctx;
    const ml_rope_args *r = k->r;
    size_t half = (size_t)r->head_dim / 2, dim = (size_t)r->n_heads * (size_t)r->head_dim;
    size_t kv_dim = (size_t)r->n_kv_heads * (size_t)r->head_dim;
    for (int t = t0; t < t1; t++) {
        size_t p = (size_t)(k->pos0 + t) * half;
        ml_k_rope(k->Q + t * dim, k->K + t * kv_dim, r->cos_t + p, r->sin_t + p, r->head_dim, r->n_heads,
                  r->n_kv_heads);
    }
}

void ml_op_rope(ml_ops *o, float *Q, float *K, int pos0, int n_tok, const ml_rope_args *r) {
    rope_task t = {Q, K, pos0, r};
    ml_pool_run(o->pool, rope_run, &t, n_tok);
}

void ml_op_softmax(float *x, int n) { ml_k_softmax(x, n); }

/* ---- attention, split by K/V head and by token ------------------------ */

/* An item is `sub` query heads of one K/V head's group (grouped-query
 * attention: sub = the whole group unless that leaves threads idle) for a
 * chunk of the batch's tokens. A tile of its tokens (up to ATTN_TILE) and
 * heads is scored and summed together, each key and value row read from
 * memory once per block for all of them (ml_k_attn_scores,
 * ml_k_attn_values take them as one set of queries): over a long context
 * the keys and values no longer stream once per token (a 1024-token prompt
 * of the stories110M shape: 1.5x faster, docs/PERF.md). Token j of a tile
 * sees j more keys than its first: all are scored together (the scores
 * past a token's own keys are never used), its softmax takes its own keys,
 * the values sum the keys they all see together, then each token's own
 * few, in order: each (token, head) gets decode's bits (kernels/canon.h
 * rule 6: an output element adds key by key, whatever the call splits).
 *
 * A tile's scores, gathered queries and outputs live in the item's part of
 * the batch's scratch; the tile shrinks (to one token, the queries and
 * outputs then in place) until every item's part fits. Decode, and a batch
 * without a scratch big enough, score each head in its row of the model's
 * att. Several threads split a batch into chunks of whole tiles, the last
 * (with the most keys) first, enough for about 4 items a thread, so that
 * the items end together. */
#define ATTN_TILE 16

typedef struct {
    const ml_attn_args *a;
    int sub;       /* query heads per item: a divisor of the group */
    int groups;    /* items per chunk: n_heads / sub */
    int chunks;    /* token chunks (1: the whole batch) */
    int chunk;     /* tokens per chunk (the last may have fewer) */
    int tile;      /* tokens per pass over the keys: 1 .. ATTN_TILE */
    int lds;       /* a scores row: pos + n_tok in the scratch, max_seq in att */
    size_t item_n; /* floats of the scratch per item (0: no scratch, att) */
} attn_ctx;

/* Tokens i .. i + nq - 1 of the sub heads from h: q, scores s (nq * sub
 * rows of lds), out; qs, os: room for nq * sub queries and outputs when
 * nq > 1. */
static void attention_tile(const attn_ctx *c, int h, int i, int nq, float *s, float *qs, float *os) {
    const ml_attn_args *a = c->a;
    const int hd = a->head_dim, dim = a->n_heads * hd, kv_dim = a->n_kv_heads * hd, sub = c->sub, nqs = nq * sub;
    const size_t kvo = (size_t)(h / (a->n_heads / a->n_kv_heads)) * (size_t)hd; /* the K/V head's columns */
    const size_t head = (size_t)sub * (size_t)hd * sizeof(float);
    const int n0 = a->pos + i + 1; /* the keys token i sees; token i + j sees j more */
    const float *qt = a->q + (size_t)i * (size_t)dim + (size_t)h * (size_t)hd;
    float *ot = a->out + (size_t)i * (size_t)dim + (size_t)h * (size_t)hd;
    if (nq > 1) { /* query (j, g) at row j * sub + g */
        for (int j = 0; j < nq; j++) memcpy(qs + (size_t)j * (size_t)sub * (size_t)hd, qt + (size_t)j * (size_t)dim, head);
        qt = qs, ot = os;
    }
    ml_k_attn_scores(s, c->lds, qt, hd, nqs, a->kc + kvo, kv_dim, n0 + nq - 1, hd, sqrtf((float)hd));
    for (int r = 0; r < nqs; r++) ml_k_softmax(s + (size_t)r * (size_t)c->lds, n0 + r / sub);
    memset(ot, 0, (size_t)nqs * (size_t)hd * sizeof *ot);
    ml_k_attn_values(ot, hd, s, c->lds, nqs, a->vc + kvo, kv_dim, n0, hd);
    for (int j = 1; j < nq; j++) /* token j's own keys n0 .. n0 + j - 1 */
        ml_k_attn_values(ot + (size_t)j * (size_t)sub * (size_t)hd, hd, s + (size_t)j * (size_t)sub * (size_t)c->lds + n0,
                         c->lds, sub, a->vc + (size_t)n0 * (size_t)kv_dim + kvo, kv_dim, j, hd);
    if (nq > 1)
        for (int j = 0; j < nq; j++)
            memcpy(a->out + (size_t)(i + j) * (size_t)dim + (size_t)h * (size_t)hd, os + (size_t)j * (size_t)sub * (size_t)hd, head);
}

static void attention_run(void *ctx, int i0, int i1) {
    const attn_ctx *c = ctx;
    const ml_attn_args *a = c->a;
    const int n_tok = a->n_tok > 1 ? a->n_tok : 1;
    for (int it = i0; it < i1; it++) {
        const int h = (it % c->groups) * c->sub; /* the item's first query head */
        const int t0 = (c->chunks - 1 - it / c->groups) * c->chunk, t1 = t0 + c->chunk < n_tok ? t0 + c->chunk : n_tok;
        float *s = a->att + (size_t)h * (size_t)a->max_seq, *qs = NULL, *os = NULL;
        if (c->item_n) s = a->scratch + (size_t)it * c->item_n;
        if (c->tile > 1) { /* attn_item_n's room after the scores */
            qs = s + (size_t)c->tile * (size_t)c->sub * (size_t)c->lds;
            os = qs + (size_t)c->tile * (size_t)c->sub * (size_t)a->head_dim;
        }
        for (int i = t0; i < t1; i += c->tile) attention_tile(c, h, i, t1 - i < c->tile ? t1 - i : c->tile, s, qs, os);
    }
}

/* Scratch floats per item: tile tokens' scores, queries and outputs. */
static size_t attn_item_n(const attn_ctx *c, int tile) {
    const size_t rows = (size_t)tile * (size_t)c->sub;
    return rows * (size_t)c->lds + (tile > 1 ? 2 * rows * (size_t)c->a->head_dim : 0);
}

void ml_op_attention(ml_ops *o, const ml_attn_args *a) {
    const int n_tok = a->n_tok > 1 ? a->n_tok : 1;
    /* Halve the group while there are fewer items than threads (MQA). */
    attn_ctx c = {a, a->n_heads / a->n_kv_heads, 0, 1, n_tok, 1, a->max_seq, 0};
    while (c.sub % 2 == 0 && a->n_heads / c.sub < o->n_threads) c.sub /= 2;
    c.groups = a->n_heads / c.sub;
    if (n_tok > 1 && a->scratch) {
        const int tiles = (n_tok + ATTN_TILE - 1) / ATTN_TILE;
        int chunks = o->n_threads > 1 ? (4 * o->n_threads + c.groups - 1) / c.groups : 1;
        chunks = chunks < tiles ? chunks : tiles;
        attn_ctx t = c;
        t.chunk = (tiles + chunks - 1) / chunks * ATTN_TILE;
        t.chunks = (n_tok + t.chunk - 1) / t.chunk;
        t.lds = a->pos + n_tok;
        for (t.tile = ATTN_TILE; t.tile >= 1; t.tile /= 2) {
            t.item_n = attn_item_n(&t, t.tile);
            if ((size_t)(t.groups * t.chunks) * t.item_n <= a->scratch_n) break;
        }
        if (t.tile >= 1) c = t;
    }
    ml_pool_run(o->pool, attention_run, &c, c.groups * c.chunks);
}
