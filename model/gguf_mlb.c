/* GGUF -> .mlb version 2 in C (model/gguf_mlb.h). Mirrors tools/gguf_in.py
 * and tools/convert.py (checks, header, quantizer rounding) for the subset
 * it takes, so both write the same bytes; the arrays are placed by the
 * loader's own table walk (model/mlb_layout.c). */
#if !defined(_WIN32) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700 /* realpath */
#endif
#include "model/gguf_mlb.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#ifdef _WIN32
#include <direct.h>
#include <io.h>
#include <windows.h>
#else
#include <unistd.h>
#endif

#include "core/outfile.h"
#include "core/path.h"
#include "core/quant.h"
#include "model/bpe.h"
#include "model/gguf.h"
#include "model/mlb.h"
#include "model/unicode_tables.h"

/* The loader's limits (model/loader.c, tools/mlb.py LIMITS). */
#define MAX_DIM (1u << 16)
#define MAX_LAYERS 1024u
#define MAX_VOCAB (1u << 22)
#define MAX_SEQ (1u << 20)
#define MAX_PIECE 1024
/* Bumped when this converter's output changes: cached files of an older one are not reused. */
#define CONVERTER_VERSION "gguf_mlb 5"

/* ======================================================== metadata -> header */

typedef struct {
    ml_gguf g;
    const char *path;
    char arch[8];         /* "llama", "qwen2", "qwen3" */
    int neox;             /* qwen2/qwen3: q/k rotate halves, permuted into pairs */
    ml_mlb_header h;
    uint32_t gguf_hidden; /* hidden_dim as the file has it */
    double theta;         /* rope.freq_base as the file has it (llama3_scaling) */
    unsigned char *tok;   /* the embedded tokenizer.bin (tok_n bytes) */
    size_t tok_n;
    ml_gguf_str tmpl;     /* the chat template */
    int f16_overflow;     /* a re-quantized block's scale is beyond fp16 (write_body failed) */
} conv;

/* key, or for ".x" the architecture's own key "<arch>.x" (in buf). */
static const char *arch_key(const conv *c, const char *key, char *buf, size_t cap) {
    if (key[0] != '.') return key;
    snprintf(buf, cap, "%s%s", c->arch, key);
    return buf;
}

static ml_status cfg_int(conv *c, const char *key, int required, int64_t dflt, int64_t *v, ml_err *err) {
    char kb[96];
    ml_status s = ml_gguf_int(&c->g, arch_key(c, key, kb, sizeof kb), required, dflt, v, err);
    if (s) return ml_errf(err, s, "%s: %s", c->path, err ? err->msg : "");
    return ML_OK;
}

static ml_status cfg_num(conv *c, const char *key, int required, double dflt, double *v, ml_err *err) {
    char kb[96];
    ml_status s = ml_gguf_num(&c->g, arch_key(c, key, kb, sizeof kb), required, dflt, v, err);
    if (s) return ml_errf(err, s, "%s: %s", c->path, err ? err->msg : "");
    return ML_OK;
}

/* tools/gguf_in.py GGUFSource._config and convert.py check_config. */
static ml_status read_config(conv *c, ml_err *err) {
    ml_gguf_str arch;
    ml_status s;
    if ((s = ml_gguf_string(&c->g, "general.architecture", 1, NULL, &arch, err)))
        return ml_errf(err, s, "%s: %s", c->path, err ? err->msg : "");
    static const char *const archs[] = {"llama", "qwen2", "qwen3"};
    int ai = -1;
    for (int i = 0; i < 3; i++)
        if (ml_gguf_str_is(arch, archs[i])) ai = i;
    if (ai < 0)
        return ml_errf(err, ML_E_FORMAT, "%s: architecture '%.*s' is not supported (only 'llama', "
                       "'qwen2', 'qwen3')", c->path, (int)(arch.len > 64 ? 64 : arch.len), arch.s);
    snprintf(c->arch, sizeof c->arch, "%s", archs[ai]);
    c->neox = ai > 0;
    static const struct { const char *key, *name; uint32_t lo, hi; } ints[] = {
        {".embedding_length", "dim", 1, MAX_DIM},        {".feed_forward_length", "hidden_dim", 1, 4 * MAX_DIM},
        {".block_count", "n_layers", 1, MAX_LAYERS},     {".attention.head_count", "n_heads", 1, MAX_DIM},
        {".context_length", "max_seq", 1, MAX_SEQ},
    };
    int64_t v[5];
    for (int i = 0; i < 5; i++) {
        if ((s = cfg_int(c, ints[i].key, 1, 0, &v[i], err))) return s;
        if (v[i] < ints[i].lo || v[i] > ints[i].hi)
            return ml_errf(err, ML_E_FORMAT, "%s: %s%s = %lld: the runtime's %s is %u..%u", c->path, c->arch, ints[i].key,
                           (long long)v[i], ints[i].name, ints[i].lo, ints[i].hi);
    }
    int64_t kv, hd, rot, vl, experts;
    if ((s = cfg_int(c, ".attention.head_count_kv", 0, v[3], &kv, err))) return s;
    if (kv < 1 || kv > v[3])
        return ml_errf(err, ML_E_FORMAT, "%s: %s.attention.head_count_kv = %lld: the runtime's n_kv_heads is 1..%lld",
                       c->path, c->arch, (long long)kv, (long long)v[3]);
    if (v[3] > v[0])
        return ml_errf(err, ML_E_FORMAT, "%s: %s.attention.head_count = %lld: the runtime's n_heads is 1..%lld",
                       c->path, c->arch, (long long)v[3], (long long)v[0]);
    double theta, eps, factor;
    if ((s = cfg_num(c, ".rope.freq_base", 0, 10000.0, &theta, err)) ||
        (s = cfg_num(c, ".attention.layer_norm_rms_epsilon", 1, 0, &eps, err)) ||
        (s = cfg_int(c, ".attention.key_length", 0, v[0] / v[3], &hd, err)) ||
        (s = cfg_int(c, ".expert_count", 0, 0, &experts, err)))
        return s;
    if ((s = cfg_int(c, ".rope.dimension_count", 0, hd, &rot, err)) ||
        (s = cfg_int(c, ".attention.value_length", 0, hd, &vl, err)) ||
        (s = cfg_num(c, ".rope.scaling.factor", 0, 1.0, &factor, err)))
        return s;
    ml_gguf_str scaling;
    char kb[96];
    if ((s = ml_gguf_string(&c->g, arch_key(c, ".rope.scaling.type", kb, sizeof kb), 0, "none", &scaling, err)))
        return ml_errf(err, s, "%s: %s", c->path, err ? err->msg : "");
    const char *bad = NULL;
    if (ml_gguf_find(&c->g, arch_key(c, ".attention.sliding_window", kb, sizeof kb)))
        bad = "attention.sliding_window (sliding-window attention)";
    else if (experts > 0) bad = "expert_count (mixture of experts)";
    else if (rot != hd) bad = "rope.dimension_count (a partial rotary dimension)";
    else if (!(ml_gguf_str_is(scaling, "none") && (factor == 0.0 || factor == 1.0)) && !ml_gguf_str_is(scaling, "llama3"))
        bad = "rope scaling (plain RoPE and Llama 3's only)";
    else if (vl != hd) bad = "attention.value_length (differs from the key length)";
    else if (hd <= 0 || hd % 2) bad = "attention.key_length (RoPE rotates pairs)";
    if (bad) return ml_errf(err, ML_E_FORMAT, "%s: unsupported: %s.%s", c->path, c->arch, bad);

    ml_mlb_header *h = &c->h;
    memset(h, 0, sizeof *h);
    memcpy(h->magic, ML_MLB_MAGIC, 4);
    h->version = ML_MLB_VERSION_2;
    h->dim = (uint32_t)v[0];
    c->gguf_hidden = (uint32_t)v[1];
    h->hidden_dim = (uint32_t)v[1];
    h->n_layers = (uint32_t)v[2];
    h->n_heads = (uint32_t)v[3];
    h->n_kv_heads = (uint32_t)kv;
    h->max_seq = (uint32_t)v[4];
    h->rope_theta = (float)theta;
    c->theta = theta;
    h->norm_eps = (float)eps;
    h->head_dim = (uint64_t)hd * h->n_heads == h->dim ? 0 : (uint32_t)hd;
    h->flags = ai == 1 ? ML_MLB_FLAG_QKV_BIAS : ai == 2 ? ML_MLB_FLAG_QK_NORM : 0;
    h->eot = -1;
    /* convert.py check_config and mlb.py check_shape, in the loader's words */
    if (h->dim % ML_QK)
        return ml_errf(err, ML_E_FORMAT, "%s: dim %u is not a multiple of %d", c->path, h->dim, ML_QK);
    /* convert.py padded_hidden: zero rows of w1/w3 and zero columns of w2
     * are exact (silu(0)*0 = 0) */
    h->hidden_dim = (h->hidden_dim + ML_QK - 1) / ML_QK * ML_QK;
    if (!h->head_dim && h->dim % h->n_heads)
        return ml_errf(err, ML_E_FORMAT, "%s: dim %u is not a multiple of n_heads %u", c->path, h->dim, h->n_heads);
    if (h->head_dim && (hd > MAX_DIM || hd * h->n_heads > MAX_DIM || (hd * h->n_heads) % ML_QK))
        return ml_errf(err, ML_E_FORMAT, "%s: head_dim %lld with %u heads: the runtime needs n_heads*head_dim a "
                       "multiple of %d up to %u", c->path, (long long)hd, h->n_heads, ML_QK, MAX_DIM);
    if (h->n_heads % h->n_kv_heads)
        return ml_errf(err, ML_E_FORMAT, "%s: n_heads %u is not a multiple of n_kv_heads %u", c->path, h->n_heads,
                       h->n_kv_heads);
    if (!(isfinite(h->rope_theta) && h->rope_theta > 1.0f))
        return ml_errf(err, ML_E_FORMAT, "%s: rope_theta: expected a finite value > 1 (as float32), got %g", c->path, theta);
    if (!(isfinite(h->norm_eps) && h->norm_eps >= 0.0f && h->norm_eps <= 1.0f))
        return ml_errf(err, ML_E_FORMAT, "%s: norm_eps: expected a finite value in [0, 1] (as float32), got %g",
                       c->path, eps);
    return ML_OK;
}

/* ======================================================== tensors */

/* Our tensor name -> the GGUF stem (llama.cpp's tensor names). */
static const char *gguf_stem(const char *ours) {
    static const char *const map[][2] = {
        {"tok_emb", "token_embd"}, {"final_norm", "output_norm"}, {"wcls", "output"},    {"attn_norm", "attn_norm"},
        {"wq", "attn_q"},          {"wk", "attn_k"},              {"wv", "attn_v"},      {"wo", "attn_output"},
        {"ffn_norm", "ffn_norm"},  {"w1", "ffn_gate"},            {"w2", "ffn_down"},    {"w3", "ffn_up"},
        {"q_norm", "attn_q_norm"}, {"k_norm", "attn_k_norm"},     {"bq", "attn_q"},      {"bk", "attn_k"},
        {"bv", "attn_v"},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcmp(map[i][0], ours)) return map[i][1];
    return NULL;
}

/* The GGUF's own (rows, cols) of array a: the FFN before padding. */
static void src_dims(const conv *c, const ml_mlb_array *a, uint32_t *rows, uint32_t *cols) {
    int w13 = !strcmp(a->t->name, "w1") || !strcmp(a->t->name, "w3"), w2 = !strcmp(a->t->name, "w2");
    *rows = w13 ? c->gguf_hidden : a->rows;
    *cols = w2 ? c->gguf_hidden : a->cols;
}

/* The GGUF row (or vector entry) of our row r: Qwen's q/k (weights, biases,
 * head norms) rotate halves (j, j + hd/2), ours interleaved pairs (2j, 2j+1)
 * (gguf_in.py neox_to_pairs): our row h*hd + 2j + p is its h*hd + p*hd/2 + j.
 * Quantized blocks run along the columns, so a row moves whole: lossless. */
static uint64_t src_row(const conv *c, const ml_mlb_array *a, uint64_t r) {
    const char *k = a->t->name;
    if (!c->neox) return r;
    uint32_t heads = !strcmp(k, "wq") || !strcmp(k, "bq")   ? c->h.n_heads
                     : !strcmp(k, "wk") || !strcmp(k, "bk") ? c->h.n_kv_heads
                     : !strcmp(k, "q_norm") || !strcmp(k, "k_norm") ? 1 : 0;
    if (!heads) return r;
    uint64_t hd = a->rows / heads, i = r % hd;
    return r - i + (i % 2) * (hd / 2) + i / 2;
}

static void gguf_name(char *buf, size_t cap, const ml_mlb_array *a) {
    const char *stem = gguf_stem(a->t->name);
    int bias = a->t->name[0] == 'b' && a->t->name[2] == 0; /* bq, bk, bv */
    if (a->layer >= 0) snprintf(buf, cap, "blk.%d.%s.%s", a->layer, stem ? stem : a->t->name, bias ? "bias" : "weight");
    else snprintf(buf, cap, "%s.weight", stem ? stem : a->t->name);
}

/* The output type (gguf_in.py native_wtype): Q4_0 when the file has blocks
 * of 4 bits or fewer (Q4_0, Q4_1, Q2_K, Q3_K, Q4_K: a Q4_0, Q4_K_M, Q3_K_M
 * or Q2_K file) and no Q8_0 ones, so a small download stays small; else
 * Q8_0. Its scales are fp16 (convert.py --scales auto for a GGUF), as the
 * file's own: blocks of the output's type copy bit for bit, others are
 * re-quantized with the scale rounded to fp16 (ml_gguf_convert falls back
 * to fp32 when one is beyond fp16's range). */
static uint32_t native_wtype(const ml_gguf *g) {
    int q4 = 0, q8 = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const uint32_t t = g->t[i].type;
        q4 |= t == ML_GGML_Q4_0 || t == ML_GGML_Q4_1 || t == ML_GGML_Q2_K || t == ML_GGML_Q3_K || t == ML_GGML_Q4_K;
        q8 |= t == ML_GGML_Q8_0;
    }
    return q4 && !q8 ? ML_TYPE_Q4_0 : ML_TYPE_Q8_0;
}

static int type_taken(uint32_t type); /* below, with the dequantizers */
static void row_floats(const ml_gguf_tensor *t, uint64_t r, uint32_t cols, float *out);

/* Llama 3's rope scaling (gguf_in.py _llama3): rope_freqs.weight holds a
 * divisor per frequency, as llama.cpp's converter computes them from the
 * Hugging Face config. The header keeps the parameters: the factor is the
 * largest divisor, the rest Llama 3's own, and every divisor must be the
 * one they give (gguf_in.py llama3_factors, to a relative 1e-5). */
#define LLAMA3_LOW 1.0
#define LLAMA3_HIGH 4.0
#define LLAMA3_ORIG 8192u
static ml_status llama3_scaling(conv *c, const ml_gguf_tensor *t, ml_err *err) {
    const uint32_t hd = c->h.head_dim ? c->h.head_dim : c->h.dim / c->h.n_heads;
    if (strcmp(c->arch, "llama") || t->n != hd / 2 || (t->type != ML_GGML_F32 && t->type != ML_GGML_F16))
        return ml_errf(err, ML_E_FORMAT, "%s: rope_freqs.weight of %llu entries for architecture '%s' (expected "
                       "Llama 3's, %u, F32 or F16)", c->path, (unsigned long long)t->n, c->arch, hd / 2);
    float got, factor = -INFINITY; /* entry i: row i of one column */
    for (uint32_t i = 0; i < hd / 2; i++) {
        row_floats(t, i, 1, &got);
        factor = got > factor || got != got ? got : factor; /* numpy's max: NaN wins */
    }
    int ok = isfinite(factor) && factor > 1.0f;
    for (uint32_t i = 0; ok && i < hd / 2; i++) {
        row_floats(t, i, 1, &got);
        const double wavelen = 2.0 * 3.14159265358979323846 * pow(c->theta, 2.0 * i / hd);
        const double smooth = (LLAMA3_ORIG / wavelen - LLAMA3_LOW) / (LLAMA3_HIGH - LLAMA3_LOW);
        const float want = wavelen < LLAMA3_ORIG / LLAMA3_HIGH  ? 1.0f
                           : wavelen > LLAMA3_ORIG / LLAMA3_LOW ? factor
                                                                : (float)(1.0 / ((1.0 - smooth) / factor + smooth));
        ok = fabsf(got - want) <= 1e-5f * fabsf(want);
    }
    if (!ok)
        return ml_errf(err, ML_E_FORMAT, "%s: rope_freqs: RoPE scaling factors that are not Llama 3's (factor %g, "
                       "low/high frequency factors %g/%g, original context %u): another rope type", c->path,
                       (double)factor, LLAMA3_LOW, LLAMA3_HIGH, LLAMA3_ORIG);
    c->h.rope_scaling = ML_MLB_ROPE_LLAMA3;
    c->h.rope_factor = factor;
    c->h.rope_low_freq_factor = (float)LLAMA3_LOW;
    c->h.rope_high_freq_factor = (float)LLAMA3_HIGH;
    c->h.rope_orig_max_seq = LLAMA3_ORIG;
    return ML_OK;
}

/* gguf_in.py _check_tensors: every planned tensor present with its shape and
 * a type we take, nothing left over. used: (n_tensors) marks. */
static ml_status check_tensors(conv *c, ml_err *err) {
    ml_gguf *g = &c->g;
    if (c->h.n_layers > g->n_tensors)
        return ml_errf(err, ML_E_FORMAT, "%s: %s.block_count = %u, but the file has only %llu tensors", c->path,
                       c->arch, c->h.n_layers, (unsigned long long)g->n_tensors);
    const ml_gguf_tensor *emb = ml_gguf_tensor_find(g, "token_embd.weight");
    if (!emb) return ml_errf(err, ML_E_FORMAT, "%s: tensor token_embd.weight is missing", c->path);
    uint64_t vocab = emb->n_dims == 2 ? emb->ne[1] : 0;
    if (vocab < 1 || vocab > MAX_VOCAB)
        return ml_errf(err, ML_E_FORMAT, "%s: header field vocab: expected 1..%u, got %llu", c->path, MAX_VOCAB,
                       (unsigned long long)vocab);
    c->h.vocab = (uint32_t)vocab;
    c->h.shared_classifier = ml_gguf_tensor_find(g, "output.weight") == NULL;
    c->h.wtype = native_wtype(g);
    c->h.stype = ML_MLB_STYPE_F16;
    unsigned char *used = calloc(g->n_tensors ? (size_t)g->n_tensors : 1, 1);
    if (!used) return ml_errf(err, ML_E_NOMEM, "out of memory");
    ml_status s = ML_OK;
    ml_mlb_walk w;
    ml_mlb_array a;
    ml_mlb_walk_init(&w, &c->h);
    while (s == ML_OK && ml_mlb_walk_next(&w, &a)) {
        if (a.part == ML_MLB_SCALES) continue;
        char name[96], tn[32];
        gguf_name(name, sizeof name, &a);
        const ml_gguf_tensor *t = ml_gguf_tensor_find(g, name);
        int is_vec = a.t->store == ML_MLB_F32;
        uint32_t rows, cols;
        src_dims(c, &a, &rows, &cols);
        if (!t) {
            s = ml_errf(err, ML_E_FORMAT, "%s: tensor %s is missing", c->path, name);
        } else if (t->n_dims != (is_vec ? 1u : 2u) || t->ne[0] != (uint64_t)cols * (is_vec ? rows : 1) ||
                   (!is_vec && t->ne[1] != rows)) {
            s = is_vec ? ml_errf(err, ML_E_FORMAT, "%s: tensor %s has %u dimensions (%llu, ...), expected [%u]", c->path,
                                 name, t->n_dims, (unsigned long long)t->ne[0], rows)
                       : ml_errf(err, ML_E_FORMAT, "%s: tensor %s has shape [%llu, %llu] (rows, columns; %u dimensions), "
                                 "expected [%u, %u]", c->path, name, (unsigned long long)t->ne[1],
                                 (unsigned long long)t->ne[0], t->n_dims, rows, cols);
        } else if (is_vec && t->type != ML_GGML_F32) {
            s = ml_errf(err, ML_E_FORMAT, "%s: norm %s has type %s, expected F32", c->path, name,
                        ml_gguf_type_name(t->type, tn, sizeof tn));
        } else if (!type_taken(t->type)) {
            s = ml_errf(err, ML_E_FORMAT, "%s: tensor %s has type %s; supported: F32, F16, BF16, Q8_0, Q4_0, "
                        "Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K", c->path, name, ml_gguf_type_name(t->type, tn, sizeof tn));
        } else {
            used[t - g->t] = 1;
        }
    }
    const ml_gguf_tensor *freqs = ml_gguf_tensor_find(g, "rope_freqs.weight");
    if (s == ML_OK && freqs) {
        s = llama3_scaling(c, freqs, err);
        used[freqs - g->t] = 1;
    }
    for (uint64_t i = 0; s == ML_OK && i < g->n_tensors; i++)
        if (!used[i])
            s = ml_errf(err, ML_E_FORMAT, "%s: unexpected tensor %.*s: the format holds no such tensor for "
                        "architecture '%s'", c->path, (int)(g->t[i].name.len > 96 ? 96 : g->t[i].name.len),
                        g->t[i].name.s, c->arch);
    free(used);
    return s;
}

/* ======================================================== tokenizer */

static ml_status tok_err(conv *c, ml_status s, ml_err *err) {
    return ml_errf(err, s, "%s: %s", c->path, err ? err->msg : "");
}

static const ml_gguf_kv *tok_array(conv *c, const char *key, uint32_t want_elem, uint64_t n, int required,
                                   ml_status *s, ml_err *err) {
    const ml_gguf_kv *kv = ml_gguf_find(&c->g, key);
    *s = ML_OK;
    if (!kv) {
        if (required) *s = ml_errf(err, ML_E_FORMAT, "%s: metadata key %s is missing", c->path, key);
        return NULL;
    }
    int numeric = kv->type == ML_GGUF_ARRAY && kv->arr_type != ML_GGUF_STRING && kv->arr_type != ML_GGUF_BOOL;
    if (kv->type != ML_GGUF_ARRAY || (want_elem == ML_GGUF_STRING ? kv->arr_type != ML_GGUF_STRING : !numeric) ||
        (n != UINT64_MAX && kv->arr_n != n))
        *s = ml_errf(err, ML_E_FORMAT, "%s: %s: expected an array of %llu %s", c->path, key,
                     (unsigned long long)(n == UINT64_MAX ? c->h.vocab : n),
                     want_elem == ML_GGUF_STRING ? "strings" : "numbers");
    return kv;
}

/* A token per embedding row, as the runtime's loader requires of either
 * tokenizer kind. */
static ml_status check_rows(conv *c, uint64_t n, ml_err *err) {
    if (n == c->h.vocab) return ML_OK;
    return ml_errf(err, ML_E_FORMAT, "%s: %llu tokens, but token_embd.weight has %u rows", c->path,
                   (unsigned long long)n, c->h.vocab);
}

/* The chat template (gguf_in.py: a value that is not a string is none). */
static ml_status read_template(conv *c, ml_err *err) {
    const ml_gguf_kv *kv = ml_gguf_find(&c->g, "tokenizer.chat_template");
    c->tmpl.s = "", c->tmpl.len = 0;
    if (kv && kv->type == ML_GGUF_STRING) {
        const unsigned char *at = kv->val;
        c->tmpl = ml_gguf_arr_next_str(&at);
    }
    if (memchr(c->tmpl.s, 0, (size_t)c->tmpl.len))
        return ml_errf(err, ML_E_FORMAT, "%s: chat template: a NUL byte (expected UTF-8 text without NUL)", c->path);
    return ML_OK;
}

/* ---- byte-level BPE: the tokenizer file of model/bpe.h, as tools/tokfile.py
 * bpe_from_gguf and to_bytes write it ---- */

enum { BPE_HEAD = 48, BPE_NORMAL = 1, BPE_CONTROL = 3, BPE_USER = 4, BPE_BYTE = 6 };

/* One UTF-8 code point at s[*k] (advanced); -1 if malformed. */
static long utf8_next(const unsigned char *s, uint64_t n, uint64_t *k) {
    size_t len;
    int32_t cp = ml_utf8_decode(s, (size_t)n, (size_t)*k, &len);
    if (cp >= 0) *k += len;
    return cp;
}

/* GPT-2's printable form back to bytes: '!'..'~', 0xA1..0xAC, 0xAE..0xFF are
 * themselves, the other 68 bytes U+0100.. in order. -> bytes, or -1. */
static long unmap_text(const unsigned char *s, uint64_t n, unsigned char *out) {
    static short inv[256 + 68];
    if (!inv['!']) { /* built once; the same table on every call */
        int extra = 0;
        for (int b = 0; b < 256; b++) {
            int keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            inv[keep ? b : 256 + extra++] = (short)(b + 1);
        }
    }
    long o = 0;
    for (uint64_t k = 0; k < n;) {
        long cp = utf8_next(s, n, &k);
        if (cp < 0 || cp >= 256 + 68 || !inv[cp]) return -1;
        out[o++] = (unsigned char)(inv[cp] - 1);
    }
    return o;
}

/* Token bytes -> first id: open addressing over (offset, length) in the file image. */
typedef struct {
    const unsigned char *img;
    const uint64_t *off; /* (n) token bytes at img + off[i] */
    const uint32_t *len;
    int32_t *slot;       /* (cap) id or -1 */
    uint64_t cap;
} tok_index;

static uint64_t bytes_hash(const unsigned char *p, size_t n) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

static int32_t *index_find(tok_index *x, const unsigned char *p, size_t n) {
    for (uint64_t i = bytes_hash(p, n) & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
        int32_t id = x->slot[i];
        if (id < 0 || (x->len[id] == n && !memcmp(x->img + x->off[id], p, n))) return &x->slot[i];
    }
}

/* tokenizer.ggml.pre -> the pre-tokenizer (model/bpe.h) and its flags, with
 * llama.cpp's other names for the same split rules. llama-bpe ignores merges
 * for whole tokens; Qwen2's tokenizer.json normalizes to NFC (a GGUF does not
 * say so: its pre names the family), and so does that of DeepSeek-R1's Qwen
 * distills (deepseek-r1-qwen), which is Qwen2's with DeepSeek's tokens. */
static const struct {
    const char *name;
    int pre;
    uint32_t flags;
} gguf_pres[] = {{"gpt-2", ML_BPE_PRE_GPT2, 0},
                 {"llama-bpe", ML_BPE_PRE_LLAMA3, ML_BPE_IGNORE_MERGES},
                 {"llama3", ML_BPE_PRE_LLAMA3, ML_BPE_IGNORE_MERGES},
                 {"llama-v3", ML_BPE_PRE_LLAMA3, ML_BPE_IGNORE_MERGES},
                 {"falcon3", ML_BPE_PRE_LLAMA3, ML_BPE_IGNORE_MERGES},
                 {"qwen2", ML_BPE_PRE_QWEN2, ML_BPE_NFC},
                 {"deepseek-r1-qwen", ML_BPE_PRE_QWEN2, ML_BPE_NFC},
                 {"smollm", ML_BPE_PRE_SMOLLM, 0}};

static ml_status read_bpe(conv *c, const ml_gguf_kv *toks, const ml_gguf_kv *types, ml_err *err) {
    ml_gguf *g = &c->g;
    ml_gguf_str pre;
    ml_status s;
    if ((s = ml_gguf_string(g, "tokenizer.ggml.pre", 0, "gpt-2", &pre, err))) return tok_err(c, s, err);
    int pi = -1;
    for (size_t i = 0; i < sizeof gguf_pres / sizeof *gguf_pres; i++)
        if (ml_gguf_str_is(pre, gguf_pres[i].name)) pi = (int)i;
    if (pi < 0)
        return ml_errf(err, ML_E_FORMAT,
                       "%s: tokenizer.ggml.pre is '%.*s'; supported: gpt-2, llama-bpe (llama3, llama-v3, falcon3), "
                       "qwen2 (deepseek-r1-qwen), smollm",
                       c->path, (int)(pre.len > 64 ? 64 : pre.len), pre.s);
    uint64_t n = toks->arr_n;
    const ml_gguf_kv *merges = tok_array(c, "tokenizer.ggml.merges", ML_GGUF_STRING, UINT64_MAX, 0, &s, err);
    if (s) return s;
    uint64_t nm = merges ? merges->arr_n : 0;
    if (n < 256 || n > MAX_VOCAB)
        return ml_errf(err, ML_E_FORMAT, "%s: n_tokens: %llu, expected 256..%u", c->path, (unsigned long long)n, MAX_VOCAB);
    if ((s = check_rows(c, n, err))) return s;
    /* the special ids: the tokenizer file's (eot guessed when absent) and the header's */
    int64_t ids[3];
    static const char *const keys[3] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                        "tokenizer.ggml.eot_token_id"};
    for (int i = 0; i < 3; i++) {
        if ((s = cfg_int(c, keys[i], 0, -1, &ids[i], err))) return s;
        if (ids[i] < -1 || ids[i] >= (int64_t)n || ids[i] >= (int64_t)c->h.vocab)
            return ml_errf(err, ML_E_FORMAT, "%s: %s = %lld, expected -1 or 0..%llu", c->path, keys[i],
                           (long long)ids[i], (unsigned long long)(n < c->h.vocab ? n : c->h.vocab) - 1);
    }
    int add_bos;
    if ((s = ml_gguf_bool(g, "tokenizer.ggml.add_bos_token", 0, &add_bos, err))) return tok_err(c, s, err);
    if (add_bos && ids[0] < 0)
        return ml_errf(err, ML_E_FORMAT, "%s: add_bos: expected 0 or 1 (1 needs a bos), got 1 with bos -1", c->path);
    c->h.bos = (int32_t)ids[0], c->h.eos = (int32_t)ids[1], c->h.eot = (int32_t)ids[2], c->h.add_bos = (uint32_t)add_bos;

    size_t cap = BPE_HEAD + (size_t)n * 8 + (size_t)toks->val_bytes + (size_t)nm * 12;
    uint64_t icap = 1;
    while (icap < 2 * n) icap *= 2;
    c->tok = malloc(cap);
    uint64_t *off = malloc((size_t)n * sizeof *off);
    uint32_t *len = malloc((size_t)n * sizeof *len);
    uint32_t *type = malloc((size_t)n * sizeof *type);
    int32_t *slot = malloc((size_t)icap * sizeof *slot);
    unsigned char seen[256] = {0};
    int singles = 0;
    size_t o = BPE_HEAD;
    if (!c->tok || !off || !len || !type || !slot) s = ml_errf(err, ML_E_NOMEM, "%s: out of memory for the tokenizer", c->path);
    const unsigned char *at = toks->val;
    for (uint64_t i = 0; !s && i < n; i++) {
        ml_gguf_str t = ml_gguf_arr_next_str(&at);
        double ty = types ? ml_gguf_arr_num(types, i) : BPE_NORMAL;
        if (!(ty >= 1 && ty <= 6 && ty == (int)ty)) {
            s = ml_errf(err, ML_E_FORMAT, "%s: token %llu: type %g, expected 1..6", c->path, (unsigned long long)i, ty);
            break;
        }
        type[i] = (uint32_t)ty;
        unsigned char *p = c->tok + o + 8;
        long l;
        if (type[i] == BPE_NORMAL) {
            l = unmap_text((const unsigned char *)t.s, t.len, p);
        } else { /* control, user-defined, unused, byte: the text as it is (UTF-8) */
            uint64_t k = 0;
            while (k < t.len && utf8_next((const unsigned char *)t.s, t.len, &k) >= 0) {}
            l = k == t.len ? (long)t.len : -1;
            if (l > 0) memcpy(p, t.s, (size_t)t.len);
        }
        if (l < 0) {
            s = ml_errf(err, ML_E_FORMAT, "%s: tokenizer.ggml.tokens[%llu]: '%.*s' is not %s", c->path,
                        (unsigned long long)i, (int)(t.len > 32 ? 32 : t.len), t.s,
                        type[i] == BPE_NORMAL ? "in GPT-2's byte map" : "UTF-8");
            break;
        }
        if (l < 1 || l > MAX_PIECE) {
            s = ml_errf(err, ML_E_FORMAT, "%s: token %llu: %ld bytes, expected 1..%d", c->path, (unsigned long long)i,
                        l, MAX_PIECE);
            break;
        }
        if (type[i] == BPE_NORMAL && l == 1 && !seen[p[0]]) seen[p[0]] = 1, singles++;
        off[i] = o + 8, len[i] = (uint32_t)l;
        uint32_t w[2] = {(uint32_t)l, type[i]};
        memcpy(c->tok + o, w, 8);
        o += 8 + (size_t)l;
    }
    if (!s && singles != 256) {
        int b = 0;
        while (seen[b]) b++;
        s = ml_errf(err, ML_E_FORMAT, "%s: no one-byte normal token for byte 0x%02x (byte-level BPE needs all 256)",
                    c->path, b);
    }
    tok_index x = {c->tok, off, len, slot, icap};
    for (uint64_t i = 0; !s && i < icap; i++) slot[i] = -1;
    for (uint64_t i = 0; !s && i < n; i++) {
        int32_t *sl = index_find(&x, c->tok + off[i], len[i]);
        if (*sl < 0) *sl = (int32_t)i;
    }
    /* eot: the named one, else a family's end-of-turn control or user token */
    int64_t eot = ids[2];
    static const char *const eot_names[] = {"<|im_end|>", "<|eot_id|>", "<|end_of_text|>"};
    for (int k = 0; !s && eot < 0 && k < 3; k++)
        for (uint64_t i = 0; i < n && eot < 0; i++)
            if ((type[i] == BPE_CONTROL || type[i] == BPE_USER) && len[i] == strlen(eot_names[k]) &&
                !memcmp(c->tok + off[i], eot_names[k], len[i]))
                eot = (int64_t)i;
    /* merges "left right" in GPT-2's form -> (left, right, result) ids */
    at = merges ? merges->val : NULL;
    unsigned char *buf = NULL;
    if (!s && nm && !(buf = malloc(2 * (size_t)merges->val_bytes + 2)))
        s = ml_errf(err, ML_E_NOMEM, "%s: out of memory for the merges", c->path);
    for (uint64_t r = 0; !s && r < nm; r++) {
        ml_gguf_str m = ml_gguf_arr_next_str(&at);
        const char *sp = memchr(m.s, ' ', (size_t)m.len);
        long la = -1, lb = -1;
        if (sp) {
            la = unmap_text((const unsigned char *)m.s, (uint64_t)(sp - m.s), buf);
            if (la >= 0) lb = unmap_text((const unsigned char *)sp + 1, m.len - (uint64_t)(sp - m.s) - 1, buf + la);
        }
        int32_t a = -1, b = -1, ab = -1;
        if (la >= 0 && lb >= 0) {
            a = *index_find(&x, buf, (size_t)la);
            b = *index_find(&x, buf + la, (size_t)lb);
            ab = *index_find(&x, buf, (size_t)(la + lb));
        }
        if (!sp || a < 0 || b < 0 || ab < 0) {
            s = ml_errf(err, ML_E_FORMAT, "%s: tokenizer.ggml.merges: merge %llu ('%.*s') %s", c->path,
                        (unsigned long long)r, (int)(m.len > 64 ? 64 : m.len), m.s,
                        sp ? "names a token the vocabulary lacks" : "is not 'left right'");
            break;
        }
        uint32_t w[3] = {(uint32_t)a, (uint32_t)b, (uint32_t)ab};
        memcpy(c->tok + o, w, 12);
        o += 12;
    }
    if (!s) {
        uint32_t head[12] = {0, 1, (uint32_t)gguf_pres[pi].pre, gguf_pres[pi].flags, (uint32_t)n, (uint32_t)nm, (uint32_t)ids[0],
                             (uint32_t)ids[1], (uint32_t)(int32_t)eot, (uint32_t)(add_bos && ids[0] >= 0), 0, 0};
        memcpy(head, "MLBP", 4);
        memcpy(c->tok, head, sizeof head);
        c->tok_n = o;
    }
    free(buf);
    free(off);
    free(len);
    free(type);
    free(slot);
    return s;
}

/* gguf_in.py _tokenizer: a SentencePiece vocabulary as llama2.c's tokenizer.bin. */
static ml_status read_tokenizer(conv *c, ml_err *err) {
    ml_gguf *g = &c->g;
    ml_gguf_str model;
    ml_status s;
    if ((s = ml_gguf_string(g, "tokenizer.ggml.model", 1, NULL, &model, err))) return tok_err(c, s, err);
    int bpe = ml_gguf_str_is(model, "gpt2");
    if (!bpe && !ml_gguf_str_is(model, "llama"))
        return ml_errf(err, ML_E_FORMAT, "%s: tokenizer model '%.*s' is not supported (only 'llama', SentencePiece, "
                       "and 'gpt2', byte-level BPE)", c->path, (int)(model.len > 64 ? 64 : model.len), model.s);
    const ml_gguf_kv *toks = tok_array(c, "tokenizer.ggml.tokens", ML_GGUF_STRING, UINT64_MAX, 1, &s, err);
    if (s) return s;
    uint64_t n = toks->arr_n;
    const ml_gguf_kv *types = tok_array(c, "tokenizer.ggml.token_type", ML_GGUF_I32, n, 0, &s, err);
    if (s) return s;
    if (bpe) return (s = read_bpe(c, toks, types, err)) ? s : read_template(c, err);
    const ml_gguf_kv *scores = tok_array(c, "tokenizer.ggml.scores", ML_GGUF_F32, n, 1, &s, err);
    if (s) return s;
    if ((s = check_rows(c, n, err))) return s;
    int64_t iv;
    int space;
    if ((s = cfg_int(c, ".vocab_size", 0, (int64_t)n, &iv, err))) return s;
    if ((uint64_t)iv != n)
        return ml_errf(err, ML_E_FORMAT, "%s: %s.vocab_size = %lld, but %llu tokens", c->path, c->arch, (long long)iv,
                       (unsigned long long)n);
    if ((s = ml_gguf_bool(g, "tokenizer.ggml.add_space_prefix", 1, &space, err))) return tok_err(c, s, err);
    if (!space)
        return ml_errf(err, ML_E_FORMAT, "%s: tokenizer.ggml.add_space_prefix is false; the llama2.c tokenizer always "
                       "adds the leading space", c->path);
    static const struct { const char *key; int want; } ids[] = {
        {"tokenizer.ggml.unknown_token_id", 0}, {"tokenizer.ggml.bos_token_id", 1}, {"tokenizer.ggml.eos_token_id", 2}};
    for (int i = 0; i < 3; i++) {
        if ((s = cfg_int(c, ids[i].key, 0, ids[i].want, &iv, err))) return s;
        if (iv != ids[i].want)
            return ml_errf(err, ML_E_FORMAT, "%s: %s = %lld; the runtime's is %d", c->path, ids[i].key, (long long)iv,
                           ids[i].want);
    }
    if ((s = cfg_int(c, "tokenizer.ggml.eot_token_id", 0, -1, &iv, err))) return s;
    if (iv < -1 || iv >= (int64_t)c->h.vocab)
        return ml_errf(err, ML_E_FORMAT, "%s: eot: expected -1 (none) or a token id 0..%u, got %lld", c->path,
                       c->h.vocab - 1, (long long)iv);
    c->h.bos = 1, c->h.eos = 2, c->h.eot = (int32_t)iv, c->h.add_bos = 1;
    if ((s = read_template(c, err))) return s;

    /* size, then the bytes: u32 max_token_length; per token f32 score, u32 len, bytes */
    size_t total = 4;
    const unsigned char *at = toks->val;
    for (uint64_t i = 0; i < n; i++) total += 8 + (size_t)ml_gguf_arr_next_str(&at).len;
    c->tok = malloc(total + 8);
    if (!c->tok) return ml_errf(err, ML_E_NOMEM, "%s: out of memory for the tokenizer", c->path);
    size_t o = 4;
    uint32_t maxlen = 0;
    at = toks->val;
    for (uint64_t i = 0; i < n; i++) {
        ml_gguf_str t = ml_gguf_arr_next_str(&at);
        double score = ml_gguf_arr_num(scores, i);
        double type = types ? ml_gguf_arr_num(types, i) : 1;
        if (type == 6) { /* a byte-fallback piece must read <0xNN> (upper-case hex) */
            int ok = t.len == 6 && !memcmp(t.s, "<0x", 3) && t.s[5] == '>';
            for (int k = 3; ok && k < 5; k++) ok = (t.s[k] >= '0' && t.s[k] <= '9') || (t.s[k] >= 'A' && t.s[k] <= 'F');
            if (!ok)
                return ml_errf(err, ML_E_FORMAT, "%s: byte token %llu is '%.*s', expected <0xNN>", c->path,
                               (unsigned long long)i, (int)(t.len > 32 ? 32 : t.len), t.s);
        }
        unsigned char *len_at = c->tok + o + 4, *p = c->tok + o + 8;
        size_t pl = 0;
        if (i == 1 || i == 2) {
            const char *fixed = i == 1 ? "\n<s>\n" : "\n</s>\n";
            pl = strlen(fixed);
            memcpy(p, fixed, pl);
        } else {
            for (uint64_t k = 0; k < t.len;) { /* U+2581 (E2 96 81) -> ' ' */
                if (k + 3 <= t.len && !memcmp(t.s + k, "\xe2\x96\x81", 3)) p[pl++] = ' ', k += 3;
                else p[pl++] = (unsigned char)t.s[k++];
            }
        }
        if (pl < 1 || pl > MAX_PIECE)
            return ml_errf(err, ML_E_FORMAT, "%s: token %llu is %zu bytes long, expected 1..%d", c->path,
                           (unsigned long long)i, pl, MAX_PIECE);
        if (!isfinite(score) || fabs(score) > FLT_MAX)
            return ml_errf(err, ML_E_FORMAT, "%s: token %llu has score %g", c->path, (unsigned long long)i, score);
        float f = (float)score;
        uint32_t l32 = (uint32_t)pl;
        memcpy(c->tok + o, &f, 4);
        memcpy(len_at, &l32, 4);
        o += 8 + pl;
        if (l32 > maxlen) maxlen = l32;
    }
    memcpy(c->tok, &maxlen, 4);
    c->tok_n = o;
    return ML_OK;
}

/* ======================================================== values and quantizers */

static float half_to_float(uint16_t x) {
    uint32_t sign = (uint32_t)(x >> 15) << 31, e = (x >> 10) & 31, m = x & 1023, bits;
    if (e == 31) bits = sign | 0x7F800000u | m << 13;
    else if (e) bits = sign | (e + 112) << 23 | m << 13;
    else if (!m) bits = sign;
    else { /* subnormal: normalize */
        e = 113;
        while (!(m & 1024)) m <<= 1, e--;
        bits = sign | e << 23 | (m & 1023) << 13;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* One block of a quantized GGUF type as float32, value for value the gguf
 * package's dequantization (tools/gguf_in.py): each product and sum in
 * float32, in its order: d * q, d * q + m, and for the K-quants (d * sc) * q
 * - dmin * m per sub-block of 32 (Q6_K: (d * sc) * q per 16). */
typedef void (*deq_fn)(const unsigned char *b, float *o);

static void deq_q8_0(const unsigned char *b, float *o) {
    const float d = half_to_float(rd16(b));
    for (int j = 0; j < 32; j++) o[j] = d * (float)(int8_t)b[2 + j];
}

/* Q4_0, Q4_1: byte j of qs holds element j (low nibble) and 16 + j (high). */
static int q4_quant(const unsigned char *qs, int e) { return e < 16 ? qs[e] & 15 : qs[e - 16] >> 4; }

static void deq_q4_0(const unsigned char *b, float *o) {
    const float d = half_to_float(rd16(b));
    for (int e = 0; e < 32; e++) o[e] = d * (float)(q4_quant(b + 2, e) - 8);
}

static void deq_q4_1(const unsigned char *b, float *o) {
    const float d = half_to_float(rd16(b)), m = half_to_float(rd16(b + 2));
    for (int e = 0; e < 32; e++) o[e] = d * (float)q4_quant(b + 4, e) + m;
}

/* Q5_0, Q5_1: as Q4_x, and bit e of the little-endian word qh is element
 * e's fifth bit. */
static int q5_quant(const unsigned char *qh, const unsigned char *qs, int e) {
    return q4_quant(qs, e) | ((qh[e / 8] >> (e % 8)) & 1) << 4;
}

static void deq_q5_0(const unsigned char *b, float *o) {
    const float d = half_to_float(rd16(b));
    for (int e = 0; e < 32; e++) o[e] = d * (float)(q5_quant(b + 2, b + 6, e) - 16);
}

static void deq_q5_1(const unsigned char *b, float *o) {
    const float d = half_to_float(rd16(b)), m = half_to_float(rd16(b + 2));
    for (int e = 0; e < 32; e++) o[e] = d * (float)q5_quant(b + 4, b + 8, e) + m;
}

/* Q2_K, Q3_K: 2-bit quant e (0..255) of 64 bytes: in each half h of 128,
 * bit pair (e % 128) / 32 of byte 32h + e % 32. */
static int k_crumb(const unsigned char *qs, int e) { return (qs[32 * (e / 128) + e % 32] >> 2 * (e % 128 / 32)) & 3; }

/* Q2_K: 16 bytes of scales (low nibble) and mins (high) per 16 elements,
 * 64 of quants, d, dmin. */
static void deq_q2_k(const unsigned char *b, float *o) {
    const float d = half_to_float(rd16(b + 80)), dmin = half_to_float(rd16(b + 82));
    for (int e = 0; e < 256; e++) {
        const float dl = d * (float)(b[e / 16] & 15), ml = dmin * (float)(b[e / 16] >> 4);
        o[e] = dl * (float)k_crumb(b + 16, e) - ml;
    }
}

/* Q3_K: 32 bytes hmask (bit e / 32 of byte e % 32: 0 takes 4 off the
 * quant), 64 of 2-bit quants, 12 of 6-bit scales per 16 elements (minus
 * 32: nibble k % 8 >> 4 * (k / 8) of bytes 0..7, then the bit pair k / 4
 * of byte 8 + k % 4 above it), d. */
static void deq_q3_k(const unsigned char *b, float *o) {
    const float d = half_to_float(rd16(b + 108));
    const unsigned char *sc = b + 96;
    for (int e = 0; e < 256; e++) {
        const int k = e / 16;
        const int s = ((sc[k % 8] >> 4 * (k / 8)) & 15) | ((sc[8 + k % 4] >> 2 * (k / 4)) & 3) << 4;
        const int q = k_crumb(b + 32, e) - (((b[e % 32] >> (e / 32)) & 1) ? 0 : 4);
        o[e] = d * (float)(s - 32) * (float)q;
    }
}

/* Q4_K, Q5_K: the 6-bit scale and min of sub-block j (0..7) in 12 bytes:
 * j < 4 the low 6 bits of bytes j and 4 + j; j >= 4 the nibbles of byte
 * 4 + j with the top 2 bits of bytes j - 4 and j above them. */
static void k_sub_scales(const unsigned char *b, float *ds, float *dm) {
    const float d = half_to_float(rd16(b)), dmin = half_to_float(rd16(b + 2));
    const unsigned char *s = b + 4;
    for (int j = 0; j < 8; j++) {
        int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        int m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | (s[j] >> 6) << 4;
        ds[j] = d * (float)sc;
        dm[j] = dmin * (float)m;
    }
}

/* Q4_K, Q5_K: element i of sub-block j in 128 bytes of nibbles: byte i of
 * the 32 at qs + 32 (j / 2), low nibble for an even j. */
static int k_nibble(const unsigned char *qs, int j, int i) { return (qs[32 * (j / 2) + i] >> 4 * (j % 2)) & 15; }

static void deq_q4_k(const unsigned char *b, float *o) {
    float ds[8], dm[8];
    k_sub_scales(b, ds, dm);
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 32; i++) o[32 * j + i] = ds[j] * (float)k_nibble(b + 16, j, i) - dm[j];
}

/* Q5_K: Q4_K's nibbles (after 32 bytes qh), and bit j of qh[i] the fifth
 * bit of sub-block j's element i. */
static void deq_q5_k(const unsigned char *b, float *o) {
    float ds[8], dm[8];
    k_sub_scales(b, ds, dm);
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 32; i++)
            o[32 * j + i] = ds[j] * (float)(k_nibble(b + 48, j, i) | ((b[16 + i] >> j) & 1) << 4) - dm[j];
}

/* Q6_K: 128 bytes ql, 64 qh, 16 int8 scales (one per 16 elements), d. In
 * each half h of 128 elements, element w takes the nibble w / 64 of byte
 * ql[64h + w % 64] and the bit pair w / 32 of qh[32h + w % 32], minus 32. */
static void deq_q6_k(const unsigned char *b, float *o) {
    const float d = half_to_float(rd16(b + 208));
    for (int e = 0; e < 256; e++) {
        const int h = e / 128, w = e % 128;
        int q = ((b[64 * h + w % 64] >> 4 * (w / 64)) & 15) | ((b[128 + 32 * h + w % 32] >> 2 * (w / 32)) & 3) << 4;
        o[e] = d * (float)(int8_t)b[192 + e / 16] * (float)(q - 32);
    }
}

/* The block types the converter takes (model/gguf.c sizes them). */
static const struct {
    uint32_t type;
    deq_fn f;
} DEQ[] = {
    {ML_GGML_Q8_0, deq_q8_0}, {ML_GGML_Q4_0, deq_q4_0}, {ML_GGML_Q4_1, deq_q4_1}, {ML_GGML_Q5_0, deq_q5_0},
    {ML_GGML_Q5_1, deq_q5_1}, {ML_GGML_Q2_K, deq_q2_k}, {ML_GGML_Q3_K, deq_q3_k}, {ML_GGML_Q4_K, deq_q4_k},
    {ML_GGML_Q5_K, deq_q5_k}, {ML_GGML_Q6_K, deq_q6_k},
};

static int deq_index(uint32_t type) {
    for (int i = 0; i < (int)(sizeof DEQ / sizeof *DEQ); i++)
        if (DEQ[i].type == type) return i;
    return -1;
}

/* A tensor type the converter takes: a float type or one of DEQ. */
static int type_taken(uint32_t type) {
    return type == ML_GGML_F32 || type == ML_GGML_F16 || type == ML_GGML_BF16 || deq_index(type) >= 0;
}

/* Row r (cols wide) of tensor t as float32. */
static void row_floats(const ml_gguf_tensor *t, uint64_t r, uint32_t cols, float *out) {
    switch (t->type) {
    case ML_GGML_F32: memcpy(out, t->data + r * cols * 4, (size_t)cols * 4); break; /* little-endian hosts */
    case ML_GGML_F16:
        for (uint32_t j = 0; j < cols; j++) out[j] = half_to_float(rd16(t->data + (r * cols + j) * 2));
        break;
    case ML_GGML_BF16:
        for (uint32_t j = 0; j < cols; j++) {
            uint32_t b = (uint32_t)rd16(t->data + (r * cols + j) * 2) << 16;
            memcpy(&out[j], &b, 4);
        }
        break;
    default: { /* a block type (check_tensors admits DEQ's only) */
        uint64_t bytes, elems;
        ml_gguf_type_block(t->type, &bytes, &elems);
        const deq_fn f = DEQ[deq_index(t->type)].f;
        const uint64_t nb = cols / elems;
        for (uint64_t b = 0; b < nb; b++) f(t->data + (r * nb + b) * bytes, out + b * elems);
    }
    }
}

/* tools/mlb.py _f16_scales: *d rounded to fp16 (*d16; to nearest, ties to
 * even, -0 kept), and 1/d16 (0 when d16 is a zero). 0: it overflows fp16. */
static int f16_scale(float d, uint16_t *d16, float *inv) {
    *d16 = ml_f32_to_f16(d);
    float w = ml_f16_to_f32(*d16);
    *inv = w != 0.0f ? 1.0f / w : 0.0f;
    return isfinite(w);
}

/* tools/mlb.py quantize_q8_0: d = amax/127, q = trunc(x*(127/amax) + copysign(0.5, x));
 * d16 non-NULL (quantize_q8_0(f16=True)): d rounded to fp16 into *d16, q from
 * 1/d16. 0: the scale overflows fp16. */
static int quantize_q8_block(const float *x, int8_t *q, float *d, uint16_t *d16) {
    float amax = 0.0f;
    for (int j = 0; j < ML_QK; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
    float inv = amax != 0.0f ? 127.0f / amax : 0.0f;
    if (d16) {
        if (!f16_scale(amax / 127.0f, d16, &inv)) return 0;
    } else {
        *d = amax / 127.0f;
    }
    for (int j = 0; j < ML_QK; j++) {
        float p = x[j] * inv;
        float v = truncf(p + copysignf(0.5f, x[j]));
        q[j] = (int8_t)(isnan(v) ? 0 : v > 127.0f ? 127 : v < -127.0f ? -127 : (int)v);
    }
    return 1;
}

/* tools/mlb.py quantize_q4_0: m the first element of largest |x|, d = m/-8,
 * q = min(15, trunc(x/d + 8.5)); byte j holds elements j (low) and 16+j.
 * d16 non-NULL: as quantize_q8_block. */
static int quantize_q4_block(const float *x, uint8_t *q, float *d, uint16_t *d16) {
    float m = x[0];
    for (int j = 1; j < ML_QK; j++)
        if (fabsf(x[j]) > fabsf(m)) m = x[j];
    float s = m == 0.0f ? 0.0f : m / -8.0f, inv = s != 0.0f ? 1.0f / s : 0.0f;
    if (d16) {
        if (!f16_scale(s, d16, &inv)) return 0;
    } else {
        *d = s;
    }
    uint8_t nib[ML_QK];
    for (int j = 0; j < ML_QK; j++) {
        float p = x[j] * inv;
        float v = truncf(p + 8.5f);
        nib[j] = (uint8_t)(isnan(v) ? 8 : v > 15.0f ? 15 : v < 0.0f ? 0 : (int)v);
    }
    for (int j = 0; j < ML_QK / 2; j++) q[j] = (uint8_t)(nib[j] | nib[j + 16] << 4);
    return 1;
}

/* One matrix in the file's wtype: q (quant bytes) and its rows*cols/32 scales,
 * d (float) or, for stype F16, d16 (IEEE half bits). */
static ml_status matrix(conv *c, const ml_gguf_tensor *t, const char *name, const ml_mlb_array *a,
                        unsigned char *q, float *d, uint16_t *d16, float *row, ml_err *err) {
    uint32_t rows = a->rows, cols = a->cols, src_rows, src_cols;
    src_dims(c, a, &src_rows, &src_cols);
    uint32_t nb = cols / ML_QK, wt = c->h.wtype;
    uint32_t qb = wt == ML_TYPE_Q8_0 ? ML_QK : ML_QK / 2, gb = 2 + qb;
    int copy = (wt == ML_TYPE_Q8_0 && t->type == ML_GGML_Q8_0) || (wt == ML_TYPE_Q4_0 && t->type == ML_GGML_Q4_0);
    for (uint64_t r = 0; r < rows; r++) {
        if (r >= src_rows || src_cols < cols) { /* the zero padding, quantized like any row */
            memset(row, 0, (size_t)cols * sizeof *row);
            if (r < src_rows) row_floats(t, r, src_cols, row);
        } else if (copy) { /* block for block: the fp16 scale kept, or widened exactly */
            for (uint32_t b = 0; b < nb; b++) {
                const unsigned char *blk = t->data + (src_row(c, a, r) * nb + b) * gb;
                float s = half_to_float(rd16(blk));
                if (!isfinite(s))
                    return ml_errf(err, ML_E_FORMAT, "%s: tensor %s contains NaN or Inf (row %llu block %u scale)",
                                   c->path, name, (unsigned long long)r, b);
                if (wt == ML_TYPE_Q8_0)
                    for (uint32_t j = 0; j < ML_QK; j++)
                        if (blk[2 + j] == 0x80)
                            return ml_errf(err, ML_E_FORMAT, "%s: tensor %s: row %llu block %u: Q8_0 quant -128; the "
                                           "runtime's Q8_0 quants are -127..127 (symmetric)", c->path, name,
                                           (unsigned long long)r, b);
                if (d16) d16[r * nb + b] = rd16(blk);
                else d[r * nb + b] = s;
                memcpy(q + (r * nb + b) * qb, blk + 2, qb);
            }
            continue;
        } else {
            row_floats(t, src_row(c, a, r), cols, row);
        }
        for (uint32_t j = 0; j < cols; j++)
            if (!isfinite(row[j]))
                return ml_errf(err, ML_E_FORMAT, "%s: tensor %s contains NaN or Inf (row %llu column %u)", c->path,
                               name, (unsigned long long)r, j);
        for (uint32_t b = 0; b < nb; b++) {
            uint64_t i = r * nb + b;
            int ok = wt == ML_TYPE_Q8_0 ? quantize_q8_block(row + b * ML_QK, (int8_t *)q + i * qb, &d[i], d16 ? &d16[i] : NULL)
                                        : quantize_q4_block(row + b * ML_QK, q + i * qb, &d[i], d16 ? &d16[i] : NULL);
            if (!ok) {
                c->f16_overflow = 1;
                return ml_errf(err, ML_E_FORMAT, "%s: tensor %s: row %llu block %u: its scale overflows fp16 (max "
                               "65504)", c->path, name, (unsigned long long)r, b);
            }
        }
    }
    return ML_OK;
}

/* ======================================================== the file */

static ml_status put(FILE *f, uint64_t *at, uint64_t off, const void *p, size_t n, ml_err *err) {
    static const unsigned char zeros[ML_ALIGN];
    while (*at < off) {
        size_t k = off - *at < ML_ALIGN ? (size_t)(off - *at) : ML_ALIGN;
        if (fwrite(zeros, 1, k, f) != k) return ml_errf(err, ML_E_IO, "write failed: %s", strerror(errno));
        *at += k;
    }
    if (n && fwrite(p, 1, n, f) != n) return ml_errf(err, ML_E_IO, "write failed: %s", strerror(errno));
    *at += n;
    return ML_OK;
}

static ml_status write_body(conv *c, FILE *f, ml_err *err) {
    ml_mlb_header *h = &c->h;
    uint64_t end = ml_mlb_arrays_end(h), at = 0;
    h->tok_off = (end + ML_ALIGN - 1) / ML_ALIGN * ML_ALIGN;
    h->tok_bytes = c->tok_n;
    if (c->tmpl.len) {
        h->tmpl_off = (h->tok_off + h->tok_bytes + ML_ALIGN - 1) / ML_ALIGN * ML_ALIGN;
        h->tmpl_bytes = c->tmpl.len;
    }
    /* the largest matrix sizes the buffers */
    uint64_t max_n = 0, max_cols = 0;
    ml_mlb_walk w;
    ml_mlb_array a;
    ml_mlb_walk_init(&w, h);
    while (ml_mlb_walk_next(&w, &a)) {
        if ((uint64_t)a.rows * a.cols > max_n) max_n = (uint64_t)a.rows * a.cols;
        if (a.cols > max_cols) max_cols = a.cols;
        if (a.rows > max_cols) max_cols = a.rows; /* a vector, permuted in the row buffer */
    }
    if (max_n > SIZE_MAX / 8 - 64) /* a 32-bit build and a matrix it cannot hold */
        return ml_errf(err, ML_E_NOMEM, "%s: a matrix of %llu elements is too large for this build", c->path,
                       (unsigned long long)max_n);
    unsigned char *q = malloc((size_t)max_n + 64);
    float *d = malloc((size_t)(max_n / ML_QK + 1) * sizeof *d), *row = malloc((size_t)(max_cols + 1) * sizeof *row);
    ml_status s = ML_OK;
    if (!q || !d || !row) s = ml_errf(err, ML_E_NOMEM, "%s: out of memory for a matrix of %llu elements", c->path,
                                      (unsigned long long)max_n);
    if (!s) s = put(f, &at, 0, h, sizeof *h, err);
    ml_mlb_walk_init(&w, h);
    while (!s && ml_mlb_walk_next(&w, &a)) {
        char name[96];
        gguf_name(name, sizeof name, &a);
        const ml_gguf_tensor *t = ml_gguf_tensor_find(&c->g, name);
        if (a.part == ML_MLB_FLOATS) {
            for (uint64_t j = 0; j < a.rows; j++) {
                memcpy(&row[j], t->data + src_row(c, &a, j) * 4, 4);
                if (!isfinite(row[j]))
                    s = ml_errf(err, ML_E_FORMAT, "%s: tensor %s contains NaN or Inf", c->path, name);
            }
            if (!s) s = put(f, &at, a.off, row, (size_t)a.bytes, err);
        } else if (a.part == ML_MLB_QUANTS) {
            s = matrix(c, t, name, &a, q, d, ml_mlb_stype(h) == ML_MLB_STYPE_F16 ? (uint16_t *)(void *)d : NULL, row, err);
            if (!s) s = put(f, &at, a.off, q, (size_t)a.bytes, err);
        } else {
            s = put(f, &at, a.off, d, (size_t)a.bytes, err);
        }
    }
    if (!s) s = put(f, &at, h->tok_off, c->tok, c->tok_n, err);
    if (!s && c->tmpl.len) s = put(f, &at, h->tmpl_off, c->tmpl.s, (size_t)c->tmpl.len, err);
    if (!s && at != ml_mlb_file_bytes(h))
        s = ml_errf(err, ML_E_FORMAT, "%s: wrote %llu bytes, the layout says %llu", c->path, (unsigned long long)at,
                    (unsigned long long)ml_mlb_file_bytes(h));
    free(q);
    free(d);
    free(row);
    return s;
}

ml_status ml_gguf_convert(const char *gguf_path, const char *mlb_path, ml_err *err) {
    conv c;
    memset(&c, 0, sizeof c);
    c.path = gguf_path;
    ml_named_path in = {"the GGUF", gguf_path};
    ml_status s = ml_outfile_check("the cached model", mlb_path, &in, 1, err);
    if (s) return s;
    if ((s = ml_gguf_open(&c.g, gguf_path, 1, err))) return s == ML_E_FORMAT ? tok_err(&c, s, err) : s;
    if (!(s = read_config(&c, err)) && !(s = check_tensors(&c, err)) && !(s = read_tokenizer(&c, err))) {
        /* fp16 scales, or fp32 when a re-quantized block's scale overflows
         * fp16 (convert.py --scales auto does the same). */
        for (int pass = 0; pass < 2; pass++) {
            ml_outfile o;
            memset(&o, 0, sizeof o);
            s = ml_outfile_open(&o, "the cached model", mlb_path, err);
            if (!s) s = write_body(&c, o.f, err);
            if (!s) s = ml_outfile_commit(&o, err);
            else ml_outfile_abort(&o);
            if (!s || !c.f16_overflow || c.h.stype == ML_MLB_STYPE_F32) break;
            c.h.stype = ML_MLB_STYPE_F32;
        }
    }
    free(c.tok);
    ml_gguf_close(&c.g);
    return s;
}

/* ======================================================== the cache */

int ml_gguf_is_file(const char *path) {
    FILE *f = ml_fopen(path, "rb"); /* a UTF-8 path on Windows too */
    if (!f) return 0;
    unsigned char head[4];
    int ok = fread(head, 1, 4, f) == 4 && ml_gguf_sniff(head, 4);
    fclose(f);
    return ok;
}

/* Paths are UTF-8 (core/path.h): on Windows through the wide-char API, as
 * are the environment's folders (LOCALAPPDATA of a user named Zoë). */
#ifdef _WIN32
static int make_dir(const char *p) {
    wchar_t w[ML_WPATH_MAX];
    if (!ml_path_wide(p, w, ML_WPATH_MAX)) return errno = ENOENT, -1;
    return _wmkdir(w);
}

static int dir_writable(const char *p) {
    wchar_t w[ML_WPATH_MAX];
    return ml_path_wide(p, w, ML_WPATH_MAX) && _waccess(w, 2) == 0;
}

/* The variable's value as UTF-8 in buf; NULL when unset (or too long). */
static const char *env_u8(const char *name, char *buf, int cap) {
    wchar_t wn[64];
    if (!MultiByteToWideChar(CP_UTF8, 0, name, -1, wn, 64)) return NULL;
    const wchar_t *v = _wgetenv(wn);
    return v && WideCharToMultiByte(CP_UTF8, 0, v, -1, buf, cap, NULL, NULL) > 0 ? buf : NULL;
}
#else
static int make_dir(const char *p) { return mkdir(p, 0777); }

static int dir_writable(const char *p) { return access(p, W_OK | X_OK) == 0; }

static const char *env_u8(const char *name, char *buf, int cap) {
    (void)buf, (void)cap;
    return getenv(name);
}
#endif

ml_status ml_gguf_cache_dir(char *dir, size_t cap, ml_err *err) {
    char bufs[4][ML_OUTFILE_PATH_MAX]; /* Windows: the values as UTF-8 */
    const char *env = env_u8("ML_CACHE_DIR", bufs[0], ML_OUTFILE_PATH_MAX);
    const char *xdg = env_u8("XDG_CACHE_HOME", bufs[1], ML_OUTFILE_PATH_MAX);
    const char *home = env_u8("HOME", bufs[2], ML_OUTFILE_PATH_MAX);
#ifdef _WIN32
    if (!home) home = env_u8("LOCALAPPDATA", bufs[3], ML_OUTFILE_PATH_MAX);
#endif
    int n;
    if (env && *env) n = snprintf(dir, cap, "%s", env);
    else if (xdg && *xdg) n = snprintf(dir, cap, "%s/legacy-ml", xdg);
    else if (home && *home) n = snprintf(dir, cap, "%s/.cache/legacy-ml", home);
    else return ml_errf(err, ML_E_ARG, "no cache folder for converted GGUF files: set ML_CACHE_DIR (or HOME)");
    if (n < 0 || (size_t)n >= cap) return ml_errf(err, ML_E_ARG, "the cache folder's path is too long");
    /* mkdir -p; a parent that could not be made says why the folder could
     * not (EACCES, not the folder's ENOENT) */
    int first_e = 0;
    for (char *p = dir + 1;; p++) {
#ifdef _WIN32
        if (*p == '/' || *p == '\\' || *p == 0) { /* a folder of C:\Users\x\new: backslashes part it too */
#else
        if (*p == '/' || *p == 0) {
#endif
            char keep = *p;
            *p = 0;
            int rc = make_dir(dir);
            int e = errno;
            ml_stat_t st;
            int missing = rc != 0 && e != EEXIST && (ml_stat(dir, &st) != 0 || !st.is_dir);
            *p = keep;
            if (missing && !first_e) first_e = e;
            if (missing && keep == 0)
                return ml_errf(err, ML_E_IO, "cache folder %s: %s (set ML_CACHE_DIR to a writable folder)", dir,
                               strerror(first_e));
            if (!keep) break;
        }
    }
    ml_stat_t st;
    if (ml_stat(dir, &st) != 0 || !st.is_dir)
        return ml_errf(err, ML_E_IO, "cache folder %s: not a folder (set ML_CACHE_DIR to another)", dir);
    if (!dir_writable(dir)) /* an existing folder of another user, a read-only file system */
        return ml_errf(err, ML_E_IO, "cache folder %s: %s (set ML_CACHE_DIR to a writable folder)", dir, strerror(errno));
    return ML_OK;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001B3ull;
    return h;
}

/* What the key reads of the file: its first MiB (a real GGUF's header,
 * metadata and tensor table; a small file whole) and 64 blocks of 4 KiB
 * spread over the rest. A rewrite that keeps the size and times (cp -p)
 * still changes the name when it changes what these cover. */
#define KEY_HEAD ((size_t)1 << 20)
#define KEY_BLOCKS 64
#define KEY_BLOCK ((size_t)4096)
static ml_status key_content(const char *path, uint64_t *k, ml_err *err) {
    ml_file f;
    ml_status s = ml_file_open(&f, path, 1, err);
    if (s) return s;
    size_t head = f.size < KEY_HEAD ? f.size : KEY_HEAD, span = f.size - head;
    *k = fnv(*k, f.data, head);
    if (span) {
        size_t block = span < KEY_BLOCK ? span : KEY_BLOCK;
        for (int i = 0; i < KEY_BLOCKS; i++)
            *k = fnv(*k, f.data + head + (size_t)((uint64_t)(span - block) * (uint64_t)i / (KEY_BLOCKS - 1)), block);
    }
    ml_file_close(&f);
    return ML_OK;
}

/* The cached .mlb's path (ml_gguf_cached); *fresh = 1 when it exists already. */
static ml_status cache_path(const char *gguf_path, char *mlb_path, size_t cap, int *fresh, ml_err *err) {
    ml_stat_t st;
    *fresh = 0;
    if (ml_stat(gguf_path, &st) != 0) return ml_errf(err, ML_E_IO, "%s: %s", gguf_path, strerror(errno));
    char dir[ML_OUTFILE_PATH_MAX];
    ml_status s = ml_gguf_cache_dir(dir, sizeof dir - 128, err);
    if (s) return s;
    /* the key: absolute path, size, inode, modification time (to the
     * nanosecond where the system keeps it), a sample of the content
     * (key_content), converter version. Not the change time or the device:
     * a chmod, a hard link or a remount would convert the same bytes again. */
    char abs_path[ML_OUTFILE_PATH_MAX];
#ifdef _WIN32
    wchar_t wrel[ML_WPATH_MAX], wabs[ML_WPATH_MAX];
    if (!ml_path_wide(gguf_path, wrel, ML_WPATH_MAX) || !_wfullpath(wabs, wrel, ML_WPATH_MAX) ||
        WideCharToMultiByte(CP_UTF8, 0, wabs, -1, abs_path, (int)sizeof abs_path, NULL, NULL) <= 0)
        snprintf(abs_path, sizeof abs_path, "%s", gguf_path);
#else
    if (!realpath(gguf_path, abs_path)) snprintf(abs_path, sizeof abs_path, "%s", gguf_path);
#endif
    uint64_t k = 0xCBF29CE484222325ull;
    long long id[4] = {(long long)st.size, st.mtime, st.ino, st.mtime_ns};
    k = fnv(k, abs_path, strlen(abs_path) + 1);
    k = fnv(k, id, sizeof id);
    if ((s = key_content(gguf_path, &k, err))) return s;
    k = fnv(k, CONVERTER_VERSION, sizeof CONVERTER_VERSION);
    /* the name: the GGUF's base name, safe characters only, without .gguf */
    const char *base = gguf_path;
    for (const char *p = gguf_path; *p; p++)
        if (*p == '/' || *p == '\\') base = p + 1;
    char stem[65];
    size_t n = 0;
    for (const char *p = base; *p && n < 64; p++)
        stem[n++] = (char)((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                                   *p == '-' || *p == '_' || *p == '.' ? *p : '_');
    stem[n] = 0;
    if (n > 5 && !strcmp(stem + n - 5, ".gguf")) stem[n - 5] = 0;
    int w = snprintf(mlb_path, cap, "%s/%s-%016llx.mlb", dir, stem, (unsigned long long)k);
    if (w < 0 || (size_t)w >= cap) return ml_errf(err, ML_E_ARG, "the cached model's path is too long");
    *fresh = ml_stat(mlb_path, &st) == 0 && st.is_reg;
    return ML_OK;
}

ml_status ml_gguf_cached(const char *gguf_path, char *mlb_path, size_t cap,
                         void (*on_convert)(void *ud, const char *gguf_path, const char *mlb_path), void *ud,
                         ml_err *err) {
    int fresh = 0;
    ml_status s = cache_path(gguf_path, mlb_path, cap, &fresh, err);
    if (s || fresh) return s;
    if (on_convert) on_convert(ud, gguf_path, mlb_path);
    return ml_gguf_convert(gguf_path, mlb_path, err);
}
