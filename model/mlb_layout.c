/* The .mlb tensor table (model/mlb.h) and the walk that turns a header into
 * the file's arrays: offsets and sizes, in file order. */
#include <stddef.h>

#include "core/quant.h"
#include "model/mlb.h"
#include "model/model.h"

/* ---- the table: version 1 ------------------------------------------------- */

static int unshared(const ml_mlb_header *h) { return !h->shared_classifier; }
static int qkv_bias(const ml_mlb_header *h) { return h->version >= 2 && (h->flags & ML_MLB_FLAG_QKV_BIAS); }
static int qk_norm(const ml_mlb_header *h) { return h->version >= 2 && (h->flags & ML_MLB_FLAG_QK_NORM); }

#define LAYER(f) offsetof(ml_layer, f)
#define MODEL(f) offsetof(ml_weights, f)

const ml_mlb_tensor ml_mlb_tensors[] = {
    /* name         per_layer store         rows           cols          present   field */
    {"tok_emb",    0, ML_MLB_WTYPE, ML_MLB_VOCAB,  ML_MLB_DIM,    NULL,     MODEL(tok_emb)},
    {"attn_norm",  1, ML_MLB_F32,   ML_MLB_DIM,    ML_MLB_ONE,    NULL,     LAYER(attn_norm)},
    {"wq",         1, ML_MLB_WTYPE, ML_MLB_Q_DIM,  ML_MLB_DIM,    NULL,     LAYER(wq)},
    {"wk",         1, ML_MLB_WTYPE, ML_MLB_KV_DIM, ML_MLB_DIM,    NULL,     LAYER(wk)},
    {"wv",         1, ML_MLB_WTYPE, ML_MLB_KV_DIM, ML_MLB_DIM,    NULL,     LAYER(wv)},
    {"bq",         1, ML_MLB_F32,   ML_MLB_Q_DIM,  ML_MLB_ONE,    qkv_bias, LAYER(bq)},
    {"bk",         1, ML_MLB_F32,   ML_MLB_KV_DIM, ML_MLB_ONE,    qkv_bias, LAYER(bk)},
    {"bv",         1, ML_MLB_F32,   ML_MLB_KV_DIM, ML_MLB_ONE,    qkv_bias, LAYER(bv)},
    {"q_norm",     1, ML_MLB_F32,   ML_MLB_HEAD,   ML_MLB_ONE,    qk_norm,  LAYER(q_norm)},
    {"k_norm",     1, ML_MLB_F32,   ML_MLB_HEAD,   ML_MLB_ONE,    qk_norm,  LAYER(k_norm)},
    {"wo",         1, ML_MLB_WTYPE, ML_MLB_DIM,    ML_MLB_Q_DIM,  NULL,     LAYER(wo)},
    {"ffn_norm",   1, ML_MLB_F32,   ML_MLB_DIM,    ML_MLB_ONE,    NULL,     LAYER(ffn_norm)},
    {"w1",         1, ML_MLB_WTYPE, ML_MLB_HIDDEN, ML_MLB_DIM,    NULL,     LAYER(w1)},
    {"w2",         1, ML_MLB_WTYPE, ML_MLB_DIM,    ML_MLB_HIDDEN, NULL,     LAYER(w2)},
    {"w3",         1, ML_MLB_WTYPE, ML_MLB_HIDDEN, ML_MLB_DIM,    NULL,     LAYER(w3)},
    {"final_norm", 0, ML_MLB_F32,   ML_MLB_DIM,    ML_MLB_ONE,    NULL,     MODEL(final_norm)},
    {"wcls",       0, ML_MLB_WTYPE, ML_MLB_VOCAB,  ML_MLB_DIM,    unshared, MODEL(wcls)},
};
const int ml_mlb_n_tensors = (int)(sizeof ml_mlb_tensors / sizeof *ml_mlb_tensors);

/* ---- the walk ------------------------------------------------------------- */

uint32_t ml_mlb_head_dim(const ml_mlb_header *h) {
    if (h->version >= 2 && h->head_dim) return h->head_dim;
    return h->n_heads ? h->dim / h->n_heads : 0;
}

static uint32_t dim_of(const ml_mlb_header *h, int d) {
    switch (d) {
    case ML_MLB_DIM: return h->dim;
    case ML_MLB_KV_DIM: return h->n_kv_heads * ml_mlb_head_dim(h);
    case ML_MLB_Q_DIM: return h->n_heads * ml_mlb_head_dim(h);
    case ML_MLB_HEAD: return ml_mlb_head_dim(h);
    case ML_MLB_HIDDEN: return h->hidden_dim;
    case ML_MLB_VOCAB: return h->vocab;
    default: return 1;
    }
}

void ml_mlb_walk_init(ml_mlb_walk *w, const ml_mlb_header *h) {
    *w = (ml_mlb_walk){.h = h, .layer = -1, .end = ML_MLB_HEADER_BYTES};
}

/* Past row i: to the next row, back to the first per-layer row for the next
 * layer, or on after the layer block. */
static void advance(ml_mlb_walk *w) {
    const ml_mlb_tensor *t = &ml_mlb_tensors[w->i];
    w->part = 0;
    w->i++;
    if (!t->per_layer || (w->i < ml_mlb_n_tensors && ml_mlb_tensors[w->i].per_layer)) return;
    if (++w->layer < (int)w->h->n_layers) w->i = w->first;
    else w->layer = -1;
}

int ml_mlb_walk_next(ml_mlb_walk *w, ml_mlb_array *a) {
    const ml_mlb_header *h = w->h;
    while (w->i < ml_mlb_n_tensors) {
        const ml_mlb_tensor *t = &ml_mlb_tensors[w->i];
        if (t->per_layer && w->layer < 0) { /* entering the layer block */
            w->first = w->i, w->layer = 0;
            if (!h->n_layers) { /* no layers: skip the block */
                while (w->i < ml_mlb_n_tensors && ml_mlb_tensors[w->i].per_layer) w->i++;
                w->layer = -1;
                continue;
            }
        }
        if (t->present && !t->present(h)) {
            advance(w);
            continue;
        }
        uint32_t rows = dim_of(h, t->rows), cols = dim_of(h, t->cols);
        uint64_t n = (uint64_t)rows * cols;
        *a = (ml_mlb_array){.t = t, .layer = t->per_layer ? w->layer : -1, .rows = rows, .cols = cols};
        if (t->store == ML_MLB_F32) {
            a->part = ML_MLB_FLOATS, a->bytes = n * sizeof(float);
        } else if (w->part == 0) {
            a->part = ML_MLB_QUANTS, a->bytes = ml_quant_bytes((ml_type)h->wtype, n);
        } else {
            a->part = ML_MLB_SCALES, a->bytes = n / ML_QK * sizeof(float);
        }
        a->off = (w->end + ML_ALIGN - 1) / ML_ALIGN * ML_ALIGN;
        w->end = a->off + a->bytes;
        if (t->store == ML_MLB_WTYPE && w->part == 0) w->part = 1;
        else advance(w);
        return 1;
    }
    return 0;
}

uint64_t ml_mlb_arrays_end(const ml_mlb_header *h) {
    ml_mlb_walk w;
    ml_mlb_array a;
    ml_mlb_walk_init(&w, h);
    while (ml_mlb_walk_next(&w, &a)) {}
    return w.end;
}

uint64_t ml_mlb_file_bytes(const ml_mlb_header *h) {
    uint64_t end = ml_mlb_arrays_end(h);
    if (h->version < 2) return end;
    if (h->tok_bytes && h->tok_off + h->tok_bytes > end) end = h->tok_off + h->tok_bytes;
    if (h->tmpl_bytes && h->tmpl_off + h->tmpl_bytes > end) end = h->tmpl_off + h->tmpl_bytes;
    return end;
}
