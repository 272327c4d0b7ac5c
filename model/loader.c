/* .mlb loader: validate the header, check every array against the file
 * length before touching it, point the weights into the mapping, and carve
 * the run state from one arena. Every failure names field, expected, actual. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pack.h"
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

/* A section of the file (tokenizer, template): 0/0 or a 64-aligned range
 * from *end (the end of what comes before it) inside the file. */
static ml_status check_section(uint64_t off, uint64_t bytes, const char *name, uint64_t *end, size_t size,
                               const char *path, ml_err *err) {
    if (!off && !bytes) return ML_OK;
    if (!bytes)
        return ml_errf(err, ML_E_FORMAT, "%s: %s_off: %llu with %s_bytes 0, expected 0 (no section)", path,
                       name, (unsigned long long)off, name);
    if (off % ML_ALIGN)
        return ml_errf(err, ML_E_FORMAT, "%s: %s_off: expected a multiple of %d, got %llu", path, name,
                       ML_ALIGN, (unsigned long long)off);
    if (off < *end)
        return ml_errf(err, ML_E_FORMAT,
                       "%s: %s_off: %llu overlaps what comes before it (expected >= %llu: sections follow"
                       " the last tensor array, tokenizer first)",
                       path, name, (unsigned long long)off, (unsigned long long)*end);
    if (off > size || bytes > size - off)
        return ml_errf(err, ML_E_FORMAT, "%s: %s_off/%s_bytes: bytes %llu..%llu are outside the file (%zu bytes)",
                       path, name, name, (unsigned long long)off, (unsigned long long)(off + bytes), size);
    *end = off + bytes;
    return ML_OK;
}

static int positive_finite(float v) { return isfinite(v) && v > 0.0f; }

/* The fields of version 2 (model/mlb.h), each named when refused. */
static ml_status parse_v2(const ml_mlb_header *h, size_t size, const char *path, ml_err *err) {
    for (size_t i = 0; i < sizeof h->pad; i++)
        if (h->pad[i])
            return ml_errf(err, ML_E_FORMAT, "%s: header byte %zu (reserved): expected 0, got 0x%02x", path,
                           offsetof(ml_mlb_header, pad) + i, h->pad[i]);
    if (h->reserved0)
        return ml_errf(err, ML_E_FORMAT, "%s: header field reserved (byte %zu): expected 0, got %u", path,
                       offsetof(ml_mlb_header, reserved0), h->reserved0);
    if (h->stype != ML_MLB_STYPE_F32 && h->stype != ML_MLB_STYPE_F16)
        return ml_errf(err, ML_E_FORMAT, "%s: stype: expected 0 (F32) or 1 (F16), got %u", path, h->stype);
    if (h->flags & ~ML_MLB_FLAGS_KNOWN)
        return ml_errf(err, ML_E_FORMAT, "%s: flags: unknown bits 0x%x (known: 0x%x: q/k/v biases, q/k norms)",
                       path, h->flags & ~ML_MLB_FLAGS_KNOWN, ML_MLB_FLAGS_KNOWN);
    if (h->head_dim) {
        if (h->head_dim % 2 || h->head_dim > MAX_DIM)
            return ml_errf(err, ML_E_SHAPE, "%s: head_dim: expected 0 or an even value up to %d, got %u", path,
                           MAX_DIM, h->head_dim);
        uint64_t q_dim = (uint64_t)h->n_heads * h->head_dim;
        if (q_dim > MAX_DIM || q_dim % ML_QK)
            return ml_errf(err, ML_E_SHAPE,
                           "%s: head_dim: n_heads %u * head_dim %u = %llu, expected a multiple of %d up to %d", path,
                           h->n_heads, h->head_dim, (unsigned long long)q_dim, ML_QK, MAX_DIM);
    }
    if (h->rope_scaling == ML_MLB_ROPE_NONE) {
        if (h->rope_factor != 0.0f || h->rope_low_freq_factor != 0.0f || h->rope_high_freq_factor != 0.0f ||
            h->rope_orig_max_seq)
            return ml_errf(err, ML_E_FORMAT,
                           "%s: rope_factor, rope_low/high_freq_factor, rope_orig_max_seq: expected 0 without"
                           " rope_scaling",
                           path);
    } else if (h->rope_scaling == ML_MLB_ROPE_LLAMA3) {
        if (!positive_finite(h->rope_factor))
            return ml_errf(err, ML_E_FORMAT, "%s: rope_factor: expected a finite value > 0, got %g", path,
                           (double)h->rope_factor);
        if (!positive_finite(h->rope_low_freq_factor))
            return ml_errf(err, ML_E_FORMAT, "%s: rope_low_freq_factor: expected a finite value > 0, got %g",
                           path, (double)h->rope_low_freq_factor);
        if (!isfinite(h->rope_high_freq_factor) || !(h->rope_high_freq_factor > h->rope_low_freq_factor))
            return ml_errf(err, ML_E_FORMAT,
                           "%s: rope_high_freq_factor: expected a finite value > rope_low_freq_factor %g, got %g",
                           path, (double)h->rope_low_freq_factor, (double)h->rope_high_freq_factor);
        if (h->rope_orig_max_seq < 1 || h->rope_orig_max_seq > MAX_SEQ)
            return ml_errf(err, ML_E_FORMAT, "%s: rope_orig_max_seq: expected 1..%d, got %u", path, MAX_SEQ,
                           h->rope_orig_max_seq);
    } else {
        return ml_errf(err, ML_E_FORMAT, "%s: rope_scaling: expected 0 (none) or 1 (llama3), got %u", path,
                       h->rope_scaling);
    }
    const struct { const char *name; int32_t v; } ids[] = {{"bos", h->bos}, {"eos", h->eos}, {"eot", h->eot}};
    for (int i = 0; i < 3; i++)
        if (ids[i].v < -1 || ids[i].v >= (int64_t)h->vocab)
            return ml_errf(err, ML_E_FORMAT, "%s: %s: expected -1 (none) or a token id 0..%u, got %d", path,
                           ids[i].name, h->vocab - 1, ids[i].v);
    if (h->add_bos > 1 || (h->add_bos && h->bos < 0))
        return ml_errf(err, ML_E_FORMAT, "%s: add_bos: expected 0 or 1 (1 needs a bos), got %u with bos %d", path,
                       h->add_bos, h->bos);
    uint64_t end = ml_mlb_arrays_end(h);
    ml_status s;
    if ((s = check_section(h->tok_off, h->tok_bytes, "tok", &end, size, path, err)) ||
        (s = check_section(h->tmpl_off, h->tmpl_bytes, "tmpl", &end, size, path, err)))
        return s;
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
    if (h.version != ML_MLB_VERSION && h.version != ML_MLB_VERSION_2)
        return ml_errf(err, ML_E_FORMAT, "%s: version: expected %u or %u, got %u", path, ML_MLB_VERSION,
                       ML_MLB_VERSION_2, h.version);
    /* Version 1 knows nothing past byte 52: it loads as it always did. */
    if (h.version == ML_MLB_VERSION) memset((char *)&h + 52, 0, sizeof h - 52);
    const uint32_t stype = ml_mlb_stype(&h);
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
    if (!h.head_dim && h.dim % h.n_heads)
        return ml_errf(err, ML_E_SHAPE, "%s: n_heads: expected a divisor of dim %u, got %u", path,
                       h.dim, h.n_heads);
    if (!h.head_dim && (h.dim / h.n_heads) % 2)
        return ml_errf(err, ML_E_SHAPE, "%s: head_dim (dim/n_heads): expected even, got %u", path,
                       h.dim / h.n_heads);
    if (h.version == ML_MLB_VERSION_2 && (s = parse_v2(&h, f->size, path, err))) return s;
    uint32_t hd = ml_mlb_head_dim(&h);
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
        .n_kv_heads = (int)h.n_kv_heads, .head_dim = (int)hd, .q_dim = (int)(h.n_heads * hd),
        .kv_dim = (int)(h.n_kv_heads * hd), .hidden_dim = (int)h.hidden_dim,
        .vocab = (int)h.vocab, .max_seq = (int)h.max_seq, .file_max_seq = (int)h.max_seq,
        .rope_theta = h.rope_theta, .norm_eps = h.norm_eps, .wtype = (int)h.wtype, .stype = (int)stype,
        .shared_classifier = (int)h.shared_classifier, .version = (int)h.version,
        .qkv_bias = !!(h.flags & ML_MLB_FLAG_QKV_BIAS), .qk_norm = !!(h.flags & ML_MLB_FLAG_QK_NORM),
        .rope_scaling = (int)h.rope_scaling, .rope_factor = h.rope_factor,
        .rope_low_freq_factor = h.rope_low_freq_factor, .rope_high_freq_factor = h.rope_high_freq_factor,
        .rope_orig_max_seq = (int)h.rope_orig_max_seq,
        /* version 1: llama2.c's ids (model/tokenizer.h) */
        .bos = h.version == ML_MLB_VERSION ? 1 : h.bos, .eos = h.version == ML_MLB_VERSION ? 2 : h.eos,
        .eot = h.version == ML_MLB_VERSION ? -1 : h.eot,
        .add_bos = h.version == ML_MLB_VERSION ? 1 : (int)h.add_bos,
    };
    return ML_OK;
}

/* ---- tensors: walk the table's arrays, checking each against the file ---- */

typedef struct {
    const ml_file *f;
    const char *path;
    uint64_t off;  /* end of the last array taken */
    ml_err *err;
    ml_status status;
    int check_values; /* scan scales, norms and Q8_0 quants (the pass that maps them) */
} cursor;

/* Array a's bytes; NULL (and status set) if they run past the end of the
 * file or the padding before them is not zero. */
static const void *take(cursor *c, const ml_mlb_array *a) {
    if (c->status) return NULL;
    const char *name = a->t->name;
    if (a->off > c->f->size || a->bytes > c->f->size - a->off) {
        c->status = ml_errf(c->err, ML_E_FORMAT,
                            "%s: truncated: tensor %s (layer %d) needs bytes %llu..%llu, file has %zu",
                            c->path, name, a->layer, (unsigned long long)a->off,
                            (unsigned long long)(a->off + a->bytes), c->f->size);
        return NULL;
    }
    /* The format's padding is zero bytes: data there means a writer that
     * aligned the arrays differently, whose file could otherwise have the
     * right length and load as garbage. */
    for (uint64_t i = c->off; i < a->off; i++) { /* a few bytes per array: every pass */
        if (c->f->data[i]) {
            c->status = ml_errf(c->err, ML_E_FORMAT,
                                "%s: padding before tensor %s (layer %d): byte %llu is 0x%02x, expected 0"
                                " (arrays start at multiples of %d; not a .mlb layout)",
                                c->path, name, a->layer, (unsigned long long)i, c->f->data[i], ML_ALIGN);
            return NULL;
        }
    }
    c->off = a->off + a->bytes;
    return c->f->data + a->off;
}

/* A section's bytes (in the file: parse_v2), its padding zero as an array's. */
static ml_bytes take_section(cursor *c, uint64_t off, uint64_t bytes, const char *name) {
    if (!bytes || c->status) return (ml_bytes){NULL, 0};
    ml_mlb_array a = {.t = &(ml_mlb_tensor){.name = name}, .layer = -1, .off = off, .bytes = bytes};
    const unsigned char *p = take(c, &a);
    return (ml_bytes){p, p ? (size_t)bytes : 0};
}

/* Non-finite scales or norm weights would silently turn every later value
 * into NaN, so they are refused at load. */
static void check_finite(cursor *c, const float *v, const ml_mlb_array *a) {
    if (c->status || !v || !c->check_values) return;
    uint64_t n = a->bytes / sizeof(float);
    for (uint64_t i = 0; i < n; i++) {
        if (!isfinite(v[i])) {
            c->status = ml_errf(c->err, ML_E_FORMAT, "%s: tensor %s (layer %d) element %llu is %g",
                                c->path, a->t->name, a->layer, (unsigned long long)i, (double)v[i]);
            return;
        }
    }
}

/* Q8_0 quants are symmetric, [-127, 127] (DESIGN §4): the x86 kernels
 * multiply |x| by w * sign(x), and -(-128) does not fit int8, so a -128 from
 * a foreign writer would give each ISA a different answer. One memchr pass
 * over the quants (the first pass maps them anyway). */
static void check_q8_range(cursor *c, const int8_t *q, const ml_mlb_array *a) {
    if (c->status || !q || !c->check_values) return;
    const int8_t *hit = memchr(q, 0x80, (size_t)a->rows * (size_t)a->cols);
    if (hit) {
        size_t i = (size_t)(hit - q), cols = a->cols;
        c->status = ml_errf(c->err, ML_E_FORMAT,
                            "%s: tensor %s (layer %d) row %zu block %zu: Q8_0 quant -128 (element %zu),"
                            " expected -%d..%d",
                            c->path, a->t->name, a->layer, i / cols, i % cols / ML_QK, i, ML_Q8_MAX,
                            ML_Q8_MAX);
    }
}

/* Array a into its view: the table row names the field of ml_weights or of
 * the layer's ml_layer. */
/* fp16 scales: no inf or NaN (exponent all ones), as check_finite. */
static void check_finite_f16(cursor *c, const uint16_t *v, const ml_mlb_array *a) {
    if (c->status || !v || !c->check_values) return;
    for (uint64_t i = 0; i < a->bytes / 2; i++) {
        if ((v[i] & 0x7C00u) == 0x7C00u) {
            c->status = ml_errf(c->err, ML_E_FORMAT, "%s: tensor %s (layer %d) scale %llu is fp16 0x%04x (inf or NaN)",
                                c->path, a->t->name, a->layer, (unsigned long long)i, (unsigned)v[i]);
            return;
        }
    }
}

static void map_array(cursor *c, const ml_mlb_array *a, ml_weights *w, ml_layer *layer, int wtype, int stype) {
    const void *p = take(c, a);
    char *field = (a->layer < 0 ? (char *)w : (char *)layer) + a->t->field;
    if (a->part == ML_MLB_FLOATS) {
        check_finite(c, p, a);
        *(const float **)(void *)field = p;
        return;
    }
    ml_qtensor *t = (ml_qtensor *)(void *)field;
    if (a->part == ML_MLB_QUANTS) {
        *t = (ml_qtensor){.q = (int8_t *)p, .rows = (int)a->rows, .cols = (int)a->cols, .type = (uint8_t)wtype};
        if (wtype == ML_TYPE_Q8_0) check_q8_range(c, p, a);
    } else if (stype == ML_TYPE_F16) {
        t->dh = (uint16_t *)p;
        t->stype = ML_TYPE_F16;
        check_finite_f16(c, p, a);
    } else {
        t->d = (float *)p;
        check_finite(c, p, a);
    }
}

/* Walk every array of the file: with layers, map them; with check_values,
 * scan their values (every byte of a scale, norm and Q8_0 array). */
static ml_status map_weights(ml_model *m, ml_layer *layers, int check_values, const char *path, ml_err *err) {
    cursor cur = {.f = &m->file, .path = path, .off = ML_MLB_HEADER_BYTES, .err = err, .check_values = check_values};
    ml_mlb_header h;
    memcpy(&h, m->file.data, sizeof h); /* checked by parse_header */
    ml_weights *w = &m->w;
    ml_layer scratch;
    ml_mlb_walk walk;
    ml_mlb_array a;
    /* a tensor the header leaves out (present() false) keeps a NULL view */
    if (layers) memset(layers, 0, (size_t)m->cfg.n_layers * sizeof *layers);
    ml_mlb_walk_init(&walk, &h);
    while (!cur.status && ml_mlb_walk_next(&walk, &a))
        map_array(&cur, &a, w, a.layer < 0 ? NULL : layers ? &layers[a.layer] : &scratch, m->cfg.wtype,
                  m->cfg.stype);
    if (cur.status) return cur.status;
    if (m->cfg.shared_classifier) w->wcls = w->tok_emb;
    m->weight_bytes = (size_t)(cur.off - ML_MLB_HEADER_BYTES);
    if (h.version == ML_MLB_VERSION_2) { /* the sections, checked by parse_v2 to lie in the file */
        m->tokenizer = take_section(&cur, h.tok_off, h.tok_bytes, "tokenizer");
        m->chat_template = take_section(&cur, h.tmpl_off, h.tmpl_bytes, "chat template");
        if (cur.status) return cur.status;
        if (cur.check_values && m->chat_template.len && memchr(m->chat_template.data, 0, m->chat_template.len))
            return ml_errf(err, ML_E_FORMAT, "%s: chat template: a NUL byte at %zu (expected UTF-8 text without NUL)",
                           path, (size_t)((const unsigned char *)memchr(m->chat_template.data, 0,
                                                                         m->chat_template.len) - m->chat_template.data));
    }
    if (cur.off != m->file.size)
        return ml_errf(err, ML_E_FORMAT, "%s: file size: expected %llu bytes for this header, got %zu",
                       path, (unsigned long long)cur.off, m->file.size);
    return ML_OK;
}

/* ---- run state: one arena --------------------------------------------- */

/* The arena is planned and carved by one walk over the buffer list
 * (run_buffers): without an arena it only sums the sizes after 64-byte
 * rounding, with one it carves them in the same order, so no two lists
 * must agree. All factors are bounded by the header checks (the batch by
 * the context), so uint64 cannot overflow; the carve runs only once the
 * sum is known to fit size_t. */
typedef struct {
    ml_arena *arena; /* NULL: count only */
    uint64_t total;
} planner;

static void *buf(planner *p, uint64_t bytes) {
    p->total += (bytes + ML_ALIGN - 1) / ML_ALIGN * ML_ALIGN;
    return p->arena ? ml_arena_alloc(p->arena, (size_t)bytes) : NULL;
}

/* Every run buffer, one line each, in arena order. */
static void run_buffers(ml_model *m, planner *p, int all_logits) {
    const ml_config *c = &m->cfg;
    const uint64_t F = sizeof(float), dim = (uint64_t)c->dim, hidden = (uint64_t)c->hidden_dim;
    const uint64_t vocab = (uint64_t)c->vocab, seq = (uint64_t)c->max_seq;
    const uint64_t kv = (uint64_t)c->n_layers * seq * (uint64_t)c->kv_dim * F;
    const uint64_t q_dim = (uint64_t)c->q_dim, in = dim > q_dim ? dim : q_dim; /* widest matmul input */
    const uint64_t widest = in > hidden ? in : hidden;
    const uint64_t half = seq * (uint64_t)(c->head_dim / 2) * F;
    ml_state *st = &m->s;
    m->w.layers        = buf(p, (uint64_t)c->n_layers * sizeof(ml_layer));
    st->att_scores     = buf(p, (uint64_t)c->n_heads * seq * F);
    st->logits         = buf(p, vocab * F);
    st->key_cache      = buf(p, kv);
    st->val_cache      = buf(p, kv);
    st->rope_cos       = buf(p, half);
    st->rope_sin       = buf(p, half);
    st->sampler_scratch = buf(p, ml_sampler_scratch_bytes(c->vocab, c->max_seq));
    /* one step's activations (ml_batch_state): cap >= 1 tokens, decode uses row 0 */
    ml_batch_state *b = &m->b;
    const uint64_t cap = (uint64_t)b->cap;
    b->x               = buf(p, cap * dim * F);
    b->x_norm          = buf(p, cap * dim * F);
    b->q               = buf(p, cap * q_dim * F);
    b->attn_out        = buf(p, cap * q_dim * F);
    b->branch_out      = buf(p, cap * dim * F);
    b->ffn_gate        = buf(p, cap * hidden * F);
    b->ffn_up          = buf(p, cap * hidden * F);
    b->x_q8.q          = buf(p, cap * widest);
    b->x_q8.d          = buf(p, cap * (widest / ML_QK) * F);
    if (all_logits) b->logits = buf(p, cap * vocab * F);
}

static ml_status carve_state(ml_model *m, const ml_open_opts *opts, ml_err *err) {
    const ml_config *c = &m->cfg;
    uint64_t kv = (uint64_t)c->n_layers * (uint64_t)c->max_seq * (uint64_t)c->kv_dim * sizeof(float);
    planner count = {0};
    run_buffers(m, &count, opts->all_logits);
    if (count.total > (uint64_t)SIZE_MAX / 2)
        return ml_errf(err, ML_E_NOMEM, "arena: %llu bytes exceed this address space (cap the context with -c)",
                       (unsigned long long)count.total);
    ml_status s = ml_arena_init(&m->arena, (size_t)count.total, err);
    if (s) {
        return ml_errf(err, ML_E_NOMEM,
                       "arena: cannot allocate %llu bytes (KV cache %llu bytes for max_seq %d; cap the context with -c)",
                       (unsigned long long)count.total, (unsigned long long)(2 * kv), c->max_seq);
    }
    planner carve = {.arena = &m->arena};
    run_buffers(m, &carve, opts->all_logits);
    m->kv_bytes = (size_t)(2 * kv);
    return ML_OK;
}

/* Llama 3's frequency scaling (HF rope_scaling type "llama3"): wavelengths
 * longer than orig/low_freq_factor are stretched by factor, shorter than
 * orig/high_freq_factor kept, the band between blended linearly. Plain
 * double arithmetic in a fixed order: the same table on every build. */
static double llama3_freq(const ml_config *c, double freq) {
    const double pi = 3.14159265358979323846;
    double orig = (double)c->rope_orig_max_seq, factor = (double)c->rope_factor;
    double lo = (double)c->rope_low_freq_factor, hi = (double)c->rope_high_freq_factor;
    double wavelen = 2.0 * pi / freq;
    if (wavelen < orig / hi) return freq;
    if (wavelen > orig / lo) return freq / factor;
    double smooth = (orig / wavelen - lo) / (hi - lo);
    return (1.0 - smooth) * freq / factor + smooth * freq;
}

/* cos/sin of pos * theta^(-2i/head_dim) for every position and pair
 * (llama2.c's interleaved-pair RoPE), computed once in double. */
static void fill_rope_tables(ml_model *m) {
    const ml_config *c = &m->cfg;
    int half = c->head_dim / 2;
    for (int i = 0; i < half; i++) {
        double freq = pow((double)c->rope_theta, -2.0 * i / c->head_dim);
        if (c->rope_scaling == ML_MLB_ROPE_LLAMA3) freq = llama3_freq(c, freq);
        for (int pos = 0; pos < c->max_seq; pos++) {
            double a = pos * freq;
            m->s.rope_cos[(size_t)pos * half + i] = (float)cos(a);
            m->s.rope_sin[(size_t)pos * half + i] = (float)sin(a);
        }
    }
}

/* The weights this process owns (read into memory, or an image handed
 * over) go once into the layout the build's kernels read fastest
 * (ml_op_weight_layout, core/pack.h): a permutation of their bytes in
 * place, the same results. A mapped file, or a caller's image, keeps the
 * file's layout, which every kernel reads too. The embedding table stays
 * row-major (rows are looked up one by one), and with it a classifier that
 * shares it. */
enum { MATRICES_PER_LAYER = 7 };

/* Matrix i of the model: the layers' seven in order, then the classifier
 * (NULL when it is the embedding table's view). */
static ml_qtensor *matrix_at(ml_model *m, int i) {
    if (i == m->cfg.n_layers * MATRICES_PER_LAYER) return m->w.wcls.q == m->w.tok_emb.q ? NULL : &m->w.wcls;
    ml_layer *L = &m->w.layers[i / MATRICES_PER_LAYER];
    ml_qtensor *const in_layer[MATRICES_PER_LAYER] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w1, &L->w2, &L->w3};
    return in_layer[i % MATRICES_PER_LAYER];
}

/* t, if it is a matrix the build's kernels want in 16-row groups, else NULL */
static ml_qtensor *to_pack(ml_qtensor *t) {
    return t && t->q && ml_op_weight_layout(t) == ML_LAYOUT_R16 ? t : NULL;
}

static ml_status pack_weights(ml_model *m, ml_err *err) {
    if (m->file.kind != ML_FILE_HEAP && m->file.kind != ML_FILE_TAKEN) return ML_OK;
    const int n = m->cfg.n_layers * MATRICES_PER_LAYER + 1;
    size_t need = 0;
    for (int i = 0; i < n; i++) {
        const ml_qtensor *t = to_pack(matrix_at(m, i));
        if (t && ml_pack_r16_scratch(t) > need) need = ml_pack_r16_scratch(t);
    }
    if (!need) return ML_OK;
    void *scratch = malloc(need);
    if (!scratch) return ml_errf(err, ML_E_NOMEM, "out of memory: %zu bytes to lay out the weights", need);
    for (int i = 0; i < n; i++) {
        ml_qtensor *t = to_pack(matrix_at(m, i));
        if (t) ml_pack_r16(t, scratch);
    }
    free(scratch);
    return ML_OK;
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
    /* The file's layout first (its size against the header, the padding
     * between arrays), then the arena (a context that can never be allocated
     * is refused at once, not after reading gigabytes of values), then the
     * values, mapped. */
    if ((s = map_weights(m, NULL, 0, path, err))) return s;
    if ((s = carve_state(m, opts, err))) return s;
    if ((s = map_weights(m, m->w.layers, 1, path, err))) return s;
    if ((s = ml_ops_init(&m->ops, opts->n_threads, err))) return s;
    fill_rope_tables(m);
    return pack_weights(m, err); /* last: an open that fails leaves the bytes as they were, but for its own NOMEM */
}

ml_status ml_model_open(ml_model *m, const char *path, const ml_open_opts *opts, ml_err *err) {
    memset(m, 0, sizeof *m);
    if (opts->use_mmap == ML_FILE_TAKE)
        return ml_errf(err, ML_E_ARG, "%s: ML_FILE_TAKE hands over a buffer (ml_model_open_buffer), not a file", path);
    ml_status s = ml_file_open(&m->file, path, opts->use_mmap, err);
    if (!s) s = open_loaded(m, path, opts, err);
    if (s) ml_model_close(m);
    return s;
}

ml_status ml_model_open_buffer(ml_model *m, const void *data, size_t size, const char *name,
                               const ml_open_opts *opts, ml_err *err) {
    memset(m, 0, sizeof *m);
    ml_file_borrow(&m->file, data, size, opts->use_mmap == ML_FILE_TAKE);
    ml_status s = open_loaded(m, name, opts, err);
    if (s) ml_model_close(m);
    return s;
}

void ml_model_close(ml_model *m) {
    ml_ops_free(&m->ops);
    ml_arena_free(&m->arena);
    ml_file_close(&m->file);
}
