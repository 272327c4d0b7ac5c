/* .mlb loader: validate the header, check every array against the file
 * length before touching it, point the weights into the mapping, and carve
 * the run state from one arena. Every failure names field, expected, actual. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "model/mlb.h"
#include "model/model.h"
#include "model/sampler.h"

/* Upper bounds that keep every index of the kernels' int arithmetic and the
 * size arithmetic below in range; far above any model this runtime targets. */
#define MAX_DIM (1 << 16)
#define MAX_LAYERS 1024
#define MAX_VOCAB (1 << 22)
#define MAX_SEQ (1 << 20)

/* ---- header ------------------------------------------------------------ */

static ml_status check_range(ml_err *err, const char *path, const char *field, uint32_t v,
                             uint32_t lo, uint32_t hi) {
    if (v < lo || v > hi)
        return ml_errf(err, ML_E_SHAPE,
                       "%s: header field %s: expected %u..%u, got %u", path, field, lo, hi, v);
    return ML_OK;
}

static ml_status parse_header(ml_config *c, const ml_file *f, const char *path, ml_err *err) {
    if (f->size < ML_MLB_HEADER_BYTES)
        return ml_errf(err, ML_E_FORMAT, "%s: file is %zu bytes, the .mlb header alone needs %d",
                       path, f->size, ML_MLB_HEADER_BYTES);
    ml_mlb_header h;
    memcpy(&h, f->data, sizeof h);
    if (memcmp(h.magic, ML_MLB_MAGIC, 4) != 0)
        return ml_errf(err, ML_E_FORMAT,
                       "%s: magic: expected \"MLB1\", got bytes %02x %02x %02x %02x (not a .mlb file;"
                       " convert checkpoints with tools/convert.py)",
                       path, (unsigned char)h.magic[0], (unsigned char)h.magic[1],
                       (unsigned char)h.magic[2], (unsigned char)h.magic[3]);
    if (h.version != ML_MLB_VERSION)
        return ml_errf(err, ML_E_FORMAT, "%s: version: expected %u, got %u", path, ML_MLB_VERSION,
                       h.version);
    ml_status s;
    if ((s = check_range(err, path, "dim", h.dim, 1, MAX_DIM)) ||
        (s = check_range(err, path, "n_layers", h.n_layers, 1, MAX_LAYERS)) ||
        (s = check_range(err, path, "n_heads", h.n_heads, 1, h.dim)) ||
        (s = check_range(err, path, "n_kv_heads", h.n_kv_heads, 1, h.n_heads)) ||
        (s = check_range(err, path, "hidden_dim", h.hidden_dim, 1, 4 * MAX_DIM)) ||
        (s = check_range(err, path, "vocab", h.vocab, 1, MAX_VOCAB)) ||
        (s = check_range(err, path, "max_seq", h.max_seq, 1, MAX_SEQ)))
        return s;
    if (h.dim % ML_QK)
        return ml_errf(err, ML_E_SHAPE, "%s: dim: expected a multiple of %d, got %u", path, ML_QK, h.dim);
    if (h.hidden_dim % ML_QK)
        return ml_errf(err, ML_E_SHAPE, "%s: hidden_dim: expected a multiple of %d, got %u", path,
                       ML_QK, h.hidden_dim);
    if (h.dim % h.n_heads)
        return ml_errf(err, ML_E_SHAPE, "%s: n_heads: expected a divisor of dim %u, got %u", path,
                       h.dim, h.n_heads);
    if ((h.dim / h.n_heads) % 2)
        return ml_errf(err, ML_E_SHAPE, "%s: head_dim (dim/n_heads): expected even, got %u", path,
                       h.dim / h.n_heads);
    if (h.n_heads % h.n_kv_heads)
        return ml_errf(err, ML_E_SHAPE, "%s: n_kv_heads: expected a divisor of n_heads %u, got %u",
                       path, h.n_heads, h.n_kv_heads);
    if (h.wtype != ML_TYPE_Q8_0 && h.wtype != ML_TYPE_Q4_0)
        return ml_errf(err, ML_E_FORMAT, "%s: wtype: expected %d (Q8_0) or %d (Q4_0), got %u", path,
                       ML_TYPE_Q8_0, ML_TYPE_Q4_0, h.wtype);
    if (h.shared_classifier > 1)
        return ml_errf(err, ML_E_FORMAT, "%s: shared_classifier: expected 0 or 1, got %u", path,
                       h.shared_classifier);
    if (!isfinite(h.rope_theta) || h.rope_theta <= 1.0f)
        return ml_errf(err, ML_E_FORMAT, "%s: rope_theta: expected a finite value > 1, got %g", path,
                       (double)h.rope_theta);
    if (!isfinite(h.norm_eps) || h.norm_eps < 0.0f || h.norm_eps > 1.0f)
        return ml_errf(err, ML_E_FORMAT, "%s: norm_eps: expected a finite value in [0, 1], got %g",
                       path, (double)h.norm_eps);
    *c = (ml_config){
        .dim = (int)h.dim, .n_layers = (int)h.n_layers, .n_heads = (int)h.n_heads,
        .n_kv_heads = (int)h.n_kv_heads, .head_dim = (int)(h.dim / h.n_heads),
        .kv_dim = (int)(h.n_kv_heads * (h.dim / h.n_heads)), .hidden_dim = (int)h.hidden_dim,
        .vocab = (int)h.vocab, .max_seq = (int)h.max_seq, .file_max_seq = (int)h.max_seq,
        .rope_theta = h.rope_theta, .norm_eps = h.norm_eps, .wtype = (int)h.wtype,
        .shared_classifier = (int)h.shared_classifier,
    };
    return ML_OK;
}

/* ---- tensors: walk the fixed array order, checking each against the file -- */

typedef struct {
    const ml_file *f;
    const char *path;
    uint64_t off;  /* next free byte */
    ml_err *err;
    ml_status status;
    int check_values; /* first pass only: scan scales and norms */
} cursor;

/* Claim n bytes at the next 64-byte boundary; NULL (and status set) if they
 * run past the end of the file. */
static const void *take(cursor *c, uint64_t n, const char *name, int layer) {
    if (c->status) return NULL;
    uint64_t at = (c->off + ML_ALIGN - 1) / ML_ALIGN * ML_ALIGN;
    if (at > c->f->size || n > c->f->size - at) {
        c->status = ml_errf(c->err, ML_E_FORMAT,
                            "%s: truncated: tensor %s (layer %d) needs bytes %llu..%llu, file has %zu",
                            c->path, name, layer, (unsigned long long)at,
                            (unsigned long long)(at + n), c->f->size);
        return NULL;
    }
    /* The format's padding is zero bytes: data there means a writer that
     * aligned the arrays differently, whose file could otherwise have the
     * right length and load as garbage. */
    for (uint64_t i = c->off; c->check_values && i < at; i++) {
        if (c->f->data[i]) {
            c->status = ml_errf(c->err, ML_E_FORMAT,
                                "%s: padding before tensor %s (layer %d): byte %llu is 0x%02x, expected 0"
                                " (arrays start at multiples of %d; not a .mlb layout)",
                                c->path, name, layer, (unsigned long long)i, c->f->data[i], ML_ALIGN);
            return NULL;
        }
    }
    c->off = at + n;
    return c->f->data + at;
}

/* Non-finite scales or norm weights would silently turn every later value
 * into NaN, so they are refused at load. */
static void check_finite(cursor *c, const float *v, uint64_t n, const char *name, int layer) {
    if (c->status || !v || !c->check_values) return;
    for (uint64_t i = 0; i < n; i++) {
        if (!isfinite(v[i])) {
            c->status = ml_errf(c->err, ML_E_FORMAT, "%s: tensor %s (layer %d) element %llu is %g",
                                c->path, name, layer, (unsigned long long)i, (double)v[i]);
            return;
        }
    }
}

static const float *take_norm(cursor *c, int n, const char *name, int layer) {
    const float *v = take(c, (uint64_t)n * sizeof(float), name, layer);
    check_finite(c, v, (uint64_t)n, name, layer);
    return v;
}

/* Q8_0 quants are symmetric, [-127, 127] (DESIGN §4): the x86 kernels
 * multiply |x| by w * sign(x), and -(-128) does not fit int8, so a -128 from
 * a foreign writer would give each ISA a different answer. One memchr pass
 * over the quants (the first pass maps them anyway). */
static void check_q8_range(cursor *c, const int8_t *q, int rows, int cols, const char *name, int layer) {
    if (c->status || !q || !c->check_values) return;
    const int8_t *hit = memchr(q, 0x80, (size_t)rows * (size_t)cols);
    if (hit) {
        size_t i = (size_t)(hit - q);
        c->status = ml_errf(c->err, ML_E_FORMAT,
                            "%s: tensor %s (layer %d) row %zu block %zu: Q8_0 quant -128 (element %zu),"
                            " expected -%d..%d",
                            c->path, name, layer, i / (size_t)cols, i % (size_t)cols / ML_QK, i, ML_Q8_MAX,
                            ML_Q8_MAX);
    }
}

static ml_qtensor take_matrix(cursor *c, int type, int rows, int cols, const char *name, int layer) {
    ml_qtensor t = {.rows = rows, .cols = cols, .type = (uint8_t)type};
    uint64_t n = (uint64_t)rows * (uint64_t)cols;
    t.q = (int8_t *)take(c, ml_quant_bytes(type, n), name, layer);
    if (type == ML_TYPE_Q8_0) check_q8_range(c, t.q, rows, cols, name, layer);
    t.d = (float *)take(c, n / ML_QK * sizeof(float), name, layer);
    check_finite(c, t.d, n / ML_QK, name, layer);
    return t;
}

/* Walk every array of the file. With layers == NULL it only validates (run
 * before the arena exists, so a damaged file never costs an allocation). */
static ml_status map_weights(ml_model *m, ml_layer *layers, const char *path, ml_err *err) {
    const ml_config *c = &m->cfg;
    cursor cur = {.f = &m->file, .path = path, .off = ML_MLB_HEADER_BYTES, .err = err,
                  .check_values = layers == NULL};
    int t = c->wtype;
    ml_weights *w = &m->w;
    ml_layer scratch;
    w->tok_emb = take_matrix(&cur, t, c->vocab, c->dim, "tok_emb", -1);
    for (int l = 0; l < c->n_layers; l++) {
        ml_layer *L = layers ? &layers[l] : &scratch;
        L->attn_norm = take_norm(&cur, c->dim, "attn_norm", l);
        L->wq = take_matrix(&cur, t, c->dim, c->dim, "wq", l);
        L->wk = take_matrix(&cur, t, c->kv_dim, c->dim, "wk", l);
        L->wv = take_matrix(&cur, t, c->kv_dim, c->dim, "wv", l);
        L->wo = take_matrix(&cur, t, c->dim, c->dim, "wo", l);
        L->ffn_norm = take_norm(&cur, c->dim, "ffn_norm", l);
        L->w1 = take_matrix(&cur, t, c->hidden_dim, c->dim, "w1", l);
        L->w2 = take_matrix(&cur, t, c->dim, c->hidden_dim, "w2", l);
        L->w3 = take_matrix(&cur, t, c->hidden_dim, c->dim, "w3", l);
    }
    w->final_norm = take_norm(&cur, c->dim, "final_norm", -1);
    w->wcls = c->shared_classifier ? w->tok_emb : take_matrix(&cur, t, c->vocab, c->dim, "wcls", -1);
    if (cur.status) return cur.status;
    if (cur.off != m->file.size)
        return ml_errf(err, ML_E_FORMAT, "%s: file size: expected %llu bytes for this header, got %zu",
                       path, (unsigned long long)cur.off, m->file.size);
    m->weight_bytes = (size_t)(cur.off - ML_MLB_HEADER_BYTES);
    return ML_OK;
}

/* ---- run state: one arena --------------------------------------------- */

/* Each buffer's byte size; the arena is their sum after 64-byte rounding.
 * All factors are bounded by the header checks (the batch by the context),
 * so uint64 cannot overflow. */
typedef struct { uint64_t n[27]; int count; uint64_t total; } plan;

static void plan_add(plan *p, uint64_t bytes) {
    p->n[p->count++] = bytes;
    p->total += (bytes + ML_ALIGN - 1) / ML_ALIGN * ML_ALIGN;
}

/* The prompt batch's buffers (ml_batch_state), in field order; none when
 * cap is 0. */
static void plan_batch(plan *p, const ml_config *c, uint64_t cap, uint64_t widest, int all_logits) {
    uint64_t F = sizeof(float);
    if (!cap) return;
    for (int i = 0; i < 5; i++) plan_add(p, cap * (uint64_t)c->dim * F); /* x .. branch_out */
    plan_add(p, cap * (uint64_t)c->hidden_dim * F);                      /* ffn_gate */
    plan_add(p, cap * (uint64_t)c->hidden_dim * F);                      /* ffn_up */
    plan_add(p, cap * widest);                                           /* x_q8.q */
    plan_add(p, cap * (widest / ML_QK) * F);                             /* x_q8.d */
    if (all_logits) plan_add(p, cap * (uint64_t)c->vocab * F);           /* logits */
}

static void carve_batch(ml_model *m, const plan *p, int *i, int all_logits) {
    ml_batch_state *b = &m->b;
    if (!b->cap) return;
    float **rows[] = {&b->x, &b->x_norm, &b->q, &b->attn_out, &b->branch_out, &b->ffn_gate, &b->ffn_up};
    for (size_t k = 0; k < sizeof rows / sizeof *rows; k++) *rows[k] = ml_arena_alloc(&m->arena, p->n[(*i)++]);
    b->x_q8.q = ml_arena_alloc(&m->arena, p->n[(*i)++]);
    b->x_q8.d = ml_arena_alloc(&m->arena, p->n[(*i)++]);
    if (all_logits) b->logits = ml_arena_alloc(&m->arena, p->n[(*i)++]);
}

static ml_status carve_state(ml_model *m, const ml_open_opts *opts, ml_err *err) {
    const ml_config *c = &m->cfg;
    uint64_t F = sizeof(float);
    uint64_t kv = (uint64_t)c->n_layers * (uint64_t)c->max_seq * (uint64_t)c->kv_dim * F;
    uint64_t widest = (uint64_t)(c->dim > c->hidden_dim ? c->dim : c->hidden_dim);
    uint64_t half = (uint64_t)c->max_seq * (uint64_t)(c->head_dim / 2) * F;
    plan p = {0};
    plan_add(&p, (uint64_t)c->n_layers * sizeof(ml_layer));
    plan_add(&p, (uint64_t)c->n_heads * c->max_seq * F); /* att_scores */
    plan_add(&p, c->vocab * F);                        /* logits */
    plan_add(&p, kv);                                  /* key cache */
    plan_add(&p, kv);                                  /* value cache */
    plan_add(&p, half);                                /* rope cos */
    plan_add(&p, half);                                /* rope sin */
    plan_add(&p, ml_sampler_scratch_bytes(c->vocab));  /* sampler */
    plan_batch(&p, c, (uint64_t)m->b.cap, widest, opts->all_logits);
    if (p.total > (uint64_t)SIZE_MAX / 2)
        return ml_errf(err, ML_E_NOMEM, "arena: %llu bytes exceed this address space (cap the context with -c)",
                       (unsigned long long)p.total);
    ml_status s = ml_arena_init(&m->arena, (size_t)p.total, err);
    if (s) {
        return ml_errf(err, ML_E_NOMEM,
                       "arena: cannot allocate %llu bytes (KV cache %llu bytes for max_seq %d; cap the context with -c)",
                       (unsigned long long)p.total, (unsigned long long)(2 * kv), c->max_seq);
    }
    ml_arena *a = &m->arena;
    ml_state *st = &m->s;
    int i = 0;
    m->w.layers = ml_arena_alloc(a, p.n[i++]);
    st->att_scores = ml_arena_alloc(a, p.n[i++]);
    st->logits = ml_arena_alloc(a, p.n[i++]);
    st->key_cache = ml_arena_alloc(a, p.n[i++]);
    st->val_cache = ml_arena_alloc(a, p.n[i++]);
    st->rope_cos = ml_arena_alloc(a, p.n[i++]);
    st->rope_sin = ml_arena_alloc(a, p.n[i++]);
    st->sampler_scratch = ml_arena_alloc(a, p.n[i++]);
    carve_batch(m, &p, &i, opts->all_logits);
    m->kv_bytes = (size_t)(2 * kv);
    return ML_OK;
}

/* cos/sin of pos * theta^(-2i/head_dim) for every position and pair
 * (llama2.c's interleaved-pair RoPE), computed once in double. */
static void fill_rope_tables(ml_model *m) {
    const ml_config *c = &m->cfg;
    int half = c->head_dim / 2;
    for (int i = 0; i < half; i++) {
        double freq = pow((double)c->rope_theta, -2.0 * i / c->head_dim);
        for (int pos = 0; pos < c->max_seq; pos++) {
            double a = pos * freq;
            m->s.rope_cos[(size_t)pos * half + i] = (float)cos(a);
            m->s.rope_sin[(size_t)pos * half + i] = (float)sin(a);
        }
    }
}

/* Everything after the bytes are in place: header, arena, weights, threads. */
static ml_status open_loaded(ml_model *m, const char *path, const ml_open_opts *opts, ml_err *err) {
    ml_status s;
    if ((uintptr_t)m->file.data % ML_ALIGN)
        return ml_errf(err, ML_E_IO, "%s: data is not %d-byte aligned", path, ML_ALIGN);
    if ((s = parse_header(&m->cfg, &m->file, path, err))) return s;
    if (opts->max_seq < 0)
        return ml_errf(err, ML_E_ARG, "context: expected a positive length, got %d", opts->max_seq);
    if (opts->max_seq > 0 && opts->max_seq < m->cfg.max_seq) m->cfg.max_seq = opts->max_seq;
    if (opts->batch < 0)
        return ml_errf(err, ML_E_ARG, "batch: expected a token count >= 0, got %d", opts->batch);
    /* A batch never holds more tokens than the context; decode is a batch of one. */
    m->b.cap = opts->batch < m->cfg.max_seq ? opts->batch : m->cfg.max_seq;
    if (m->b.cap < 1) m->b.cap = 1;
    if ((s = map_weights(m, NULL, path, err))) return s;
    if ((s = carve_state(m, opts, err))) return s;
    if ((s = map_weights(m, m->w.layers, path, err))) return s;
    if ((s = ml_ops_init(&m->ops, opts->n_threads, err))) return s;
    fill_rope_tables(m);
    return ML_OK;
}

ml_status ml_model_open(ml_model *m, const char *path, const ml_open_opts *opts, ml_err *err) {
    memset(m, 0, sizeof *m);
    ml_status s = ml_file_open(&m->file, path, opts->use_mmap, err);
    if (!s) s = open_loaded(m, path, opts, err);
    if (s) ml_model_close(m);
    return s;
}

ml_status ml_model_open_buffer(ml_model *m, const void *data, size_t size, const char *name,
                               const ml_open_opts *opts, ml_err *err) {
    memset(m, 0, sizeof *m);
    ml_file_borrow(&m->file, data, size);
    ml_status s = open_loaded(m, name, opts, err);
    if (s) ml_model_close(m);
    return s;
}

void ml_model_close(ml_model *m) {
    ml_ops_free(&m->ops);
    ml_arena_free(&m->arena);
    ml_file_close(&m->file);
}
