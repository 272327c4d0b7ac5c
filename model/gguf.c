/* GGUF reader (model/gguf.h): one bounds-checked cursor over the file. */
#include "model/gguf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the cursor: every read checks the bytes left first ------------------ */

typedef struct {
    const unsigned char *p;
    uint64_t at, size;
    ml_err *err;
} cursor;

static int need(cursor *c, uint64_t n, const char *what) {
    if (n <= c->size - c->at) return 1;
    ml_errf(c->err, ML_E_FORMAT, "GGUF: %s at byte %llu needs %llu bytes, the file has %llu (truncated?)", what,
            (unsigned long long)c->at, (unsigned long long)n, (unsigned long long)(c->size - c->at));
    return 0;
}

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static int rd_u32(cursor *c, uint32_t *v, const char *what) {
    if (!need(c, 4, what)) return 0;
    *v = (uint32_t)le(c->p + c->at, 4);
    c->at += 4;
    return 1;
}

static int rd_u64(cursor *c, uint64_t *v, const char *what) {
    if (!need(c, 8, what)) return 0;
    *v = le(c->p + c->at, 8);
    c->at += 8;
    return 1;
}

static int rd_str(cursor *c, ml_gguf_str *s, const char *what) {
    uint64_t n;
    if (!rd_u64(c, &n, what) || !need(c, n, what)) return 0;
    s->s = (const char *)c->p + c->at;
    s->len = n;
    c->at += n;
    return 1;
}

/* Bytes of one scalar value of type t; 0 for STRING/ARRAY/unknown. */
static uint64_t scalar_bytes(uint32_t t) {
    static const unsigned char bytes[ML_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < ML_GGUF_TYPE_COUNT ? bytes[t] : 0;
}

/* ---- metadata ------------------------------------------------------------ */

static int read_kv(cursor *c, ml_gguf_kv *kv, uint64_t i) {
    char what[64];
    snprintf(what, sizeof what, "metadata entry %llu", (unsigned long long)i);
    if (!rd_str(c, &kv->key, what) || !rd_u32(c, &kv->type, what)) return 0;
    uint64_t start;
    if (kv->type == ML_GGUF_ARRAY) {
        if (!rd_u32(c, &kv->arr_type, what) || !rd_u64(c, &kv->arr_n, what)) return 0;
        start = c->at;
        if (kv->arr_type == ML_GGUF_STRING) {
            for (uint64_t k = 0; k < kv->arr_n; k++) {
                ml_gguf_str s;
                if (!rd_str(c, &s, what)) return 0;
            }
        } else if (scalar_bytes(kv->arr_type)) {
            uint64_t w = scalar_bytes(kv->arr_type);
            if (kv->arr_n > (c->size - c->at) / w) return need(c, UINT64_MAX, what);
            c->at += kv->arr_n * w;
        } else {
            ml_errf(c->err, ML_E_FORMAT, "GGUF: metadata key %.*s: array of element type %u (expected 0..12, not nested)",
                    (int)(kv->key.len > 200 ? 200 : kv->key.len), kv->key.s, kv->arr_type);
            return 0;
        }
    } else {
        start = c->at;
        if (kv->type == ML_GGUF_STRING) {
            ml_gguf_str s;
            if (!rd_str(c, &s, what)) return 0;
        } else if (scalar_bytes(kv->type)) {
            if (!need(c, scalar_bytes(kv->type), what)) return 0;
            c->at += scalar_bytes(kv->type);
        } else {
            ml_errf(c->err, ML_E_FORMAT, "GGUF: metadata key %.*s: value type %u (expected 0..12)",
                    (int)(kv->key.len > 200 ? 200 : kv->key.len), kv->key.s, kv->type);
            return 0;
        }
    }
    kv->val = c->p + start;
    kv->val_bytes = c->at - start;
    return 1;
}

/* ---- tensor infos ---------------------------------------------------------- */

/* The types sized here: bytes and elements a block, name. */
static const struct { uint32_t t; unsigned short bytes, elems; const char *name; } TYPES[] = {
    {ML_GGML_F32, 4, 1, "F32"},      {ML_GGML_F16, 2, 1, "F16"},      {ML_GGML_Q4_0, 18, 32, "Q4_0"},
    {ML_GGML_Q4_1, 20, 32, "Q4_1"},  {ML_GGML_Q5_0, 22, 32, "Q5_0"},  {ML_GGML_Q5_1, 24, 32, "Q5_1"},
    {ML_GGML_Q8_0, 34, 32, "Q8_0"},  {ML_GGML_Q2_K, 84, 256, "Q2_K"}, {ML_GGML_Q3_K, 110, 256, "Q3_K"},
    {ML_GGML_Q4_K, 144, 256, "Q4_K"}, {ML_GGML_Q5_K, 176, 256, "Q5_K"}, {ML_GGML_Q6_K, 210, 256, "Q6_K"},
    {ML_GGML_BF16, 2, 1, "BF16"},
};

int ml_gguf_type_block(uint32_t t, uint64_t *bytes, uint64_t *elems) {
    for (size_t i = 0; i < sizeof TYPES / sizeof *TYPES; i++)
        if (TYPES[i].t == t) {
            if (bytes) *bytes = TYPES[i].bytes, *elems = TYPES[i].elems;
            return (int)i + 1;
        }
    return 0;
}

const char *ml_gguf_type_name(uint32_t type, char *buf, size_t cap) {
    int k = ml_gguf_type_block(type, NULL, NULL);
    if (k) return TYPES[k - 1].name;
    snprintf(buf, cap, "ggml type %u", type);
    return buf;
}

static int read_tensor(cursor *c, ml_gguf_tensor *t, uint64_t i) {
    char what[64];
    snprintf(what, sizeof what, "tensor info %llu", (unsigned long long)i);
    if (!rd_str(c, &t->name, what) || !rd_u32(c, &t->n_dims, what)) return 0;
    int nl = (int)(t->name.len > 200 ? 200 : t->name.len);
    if (t->n_dims < 1 || t->n_dims > ML_GGUF_MAX_DIMS) {
        ml_errf(c->err, ML_E_FORMAT, "GGUF: tensor %.*s: %u dimensions, expected 1..%d", nl, t->name.s, t->n_dims,
                ML_GGUF_MAX_DIMS);
        return 0;
    }
    t->n = 1;
    for (int d = 0; d < ML_GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if ((uint32_t)d < t->n_dims && !rd_u64(c, &t->ne[d], what)) return 0;
        /* no element count past 2^60: the byte sizes below cannot overflow */
        if (t->ne[d] == 0 || t->ne[d] > (UINT64_C(1) << 60) / t->n) {
            ml_errf(c->err, ML_E_FORMAT, "GGUF: tensor %.*s: dimension %d is %llu (empty, or too many elements)", nl,
                    t->name.s, d, (unsigned long long)t->ne[d]);
            return 0;
        }
        t->n *= t->ne[d];
    }
    if (!rd_u32(c, &t->type, what) || !rd_u64(c, &t->offset, what)) return 0;
    uint64_t bb, be;
    t->bytes = 0;
    if (ml_gguf_type_block(t->type, &bb, &be)) {
        if (t->ne[0] % be) {
            ml_errf(c->err, ML_E_FORMAT, "GGUF: tensor %.*s: %llu columns, not a multiple of its type's block of %llu",
                    nl, t->name.s, (unsigned long long)t->ne[0], (unsigned long long)be);
            return 0;
        }
        t->bytes = t->n / be * bb;
    }
    return 1;
}

/* ---- the whole file ------------------------------------------------------- */

int ml_gguf_sniff(const void *head, size_t n) { return n >= 4 && !memcmp(head, ML_GGUF_MAGIC, 4); }

void ml_gguf_close(ml_gguf *g) {
    free(g->kv);
    free(g->t);
    ml_file_close(&g->file);
    memset(g, 0, sizeof *g);
}

int ml_gguf_str_is(ml_gguf_str s, const char *z) { return s.len == strlen(z) && !memcmp(s.s, z, s.len); }

const ml_gguf_kv *ml_gguf_find(const ml_gguf *g, const char *key) {
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (ml_gguf_str_is(g->kv[i].key, key)) return &g->kv[i];
    return NULL;
}

const ml_gguf_tensor *ml_gguf_tensor_find(const ml_gguf *g, const char *name) {
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (ml_gguf_str_is(g->t[i].name, name)) return &g->t[i];
    return NULL;
}

static int key_order(const void *a, const void *b) {
    const ml_gguf_str *x = &(*(const ml_gguf_kv *const *)a)->key, *y = &(*(const ml_gguf_kv *const *)b)->key;
    int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* A key given twice: which value counts would be a guess, so refused (by
 * sorting: a file may hold millions of keys). */
static ml_status check_keys_unique(const ml_gguf *g, ml_err *err) {
    if (g->n_kv < 2) return ML_OK;
    const ml_gguf_kv **by = malloc((size_t)g->n_kv * sizeof *by);
    if (!by) return ml_errf(err, ML_E_NOMEM, "GGUF: out of memory for the metadata keys");
    for (uint64_t i = 0; i < g->n_kv; i++) by[i] = &g->kv[i];
    qsort(by, (size_t)g->n_kv, sizeof *by, key_order);
    ml_status s = ML_OK;
    for (uint64_t i = 1; i < g->n_kv && !s; i++)
        if (!key_order(&by[i - 1], &by[i]))
            s = ml_errf(err, ML_E_FORMAT, "GGUF: the metadata key %.*s appears twice",
                        (int)(by[i]->key.len > 200 ? 200 : by[i]->key.len), by[i]->key.s);
    free(by);
    return s;
}

static ml_status parse(ml_gguf *g, ml_err *err) {
    cursor c = {g->file.data, 0, g->file.size, err};
    if (!need(&c, 4, "the magic")) return ML_E_FORMAT;
    if (!ml_gguf_sniff(c.p, 4))
        return ml_errf(err, ML_E_FORMAT, "GGUF: bad magic (expected \"GGUF\"): not a GGUF file");
    c.at = 4;
    if (!rd_u32(&c, &g->version, "the version")) return ML_E_FORMAT;
    if (g->version != 2 && g->version != 3) {
        if (g->version && !(g->version & 0xFFFF))
            return ml_errf(err, ML_E_FORMAT, "GGUF: a big-endian file; only little-endian is supported");
        return ml_errf(err, ML_E_FORMAT, "GGUF: version %u is not supported (only 2 and 3)", g->version);
    }
    if (!rd_u64(&c, &g->n_tensors, "the tensor count") || !rd_u64(&c, &g->n_kv, "the metadata count"))
        return ML_E_FORMAT;
    /* each entry takes at least 12 (key/value) or 24 (tensor) bytes: counts
     * beyond that are a corrupt header, not an allocation to try */
    if (g->n_kv > (c.size - c.at) / 12 || g->n_tensors > (c.size - c.at) / 24)
        return ml_errf(err, ML_E_FORMAT, "GGUF: %llu metadata entries and %llu tensors do not fit in %llu bytes",
                       (unsigned long long)g->n_kv, (unsigned long long)g->n_tensors, (unsigned long long)c.size);
    g->kv = calloc(g->n_kv ? (size_t)g->n_kv : 1, sizeof *g->kv);
    g->t = calloc(g->n_tensors ? (size_t)g->n_tensors : 1, sizeof *g->t);
    if (!g->kv || !g->t) return ml_errf(err, ML_E_NOMEM, "GGUF: out of memory for the tensor table");
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (!read_kv(&c, &g->kv[i], i)) return ML_E_FORMAT;
    ml_status ks = check_keys_unique(g, err);
    if (ks) return ks;
    g->alignment = ML_GGUF_DEFAULT_ALIGN;
    const ml_gguf_kv *a = ml_gguf_find(g, "general.alignment");
    if (a) {
        uint64_t v = a->type == ML_GGUF_U32 ? le(a->val, 4) : 0;
        if (!v || v & (v - 1) || v > 65536)
            return ml_errf(err, ML_E_FORMAT, "GGUF: general.alignment must be a u32 power of two up to 65536");
        g->alignment = (uint32_t)v;
    }
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (!read_tensor(&c, &g->t[i], i)) return ML_E_FORMAT;
    g->data_off = (c.at + g->alignment - 1) / g->alignment * g->alignment;
    if (g->data_off > c.size && g->n_tensors)
        return ml_errf(err, ML_E_FORMAT, "GGUF: the data section (byte %llu) starts past the end (%llu bytes)",
                       (unsigned long long)g->data_off, (unsigned long long)c.size);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        ml_gguf_tensor *t = &g->t[i];
        int nl = (int)(t->name.len > 200 ? 200 : t->name.len);
        if (t->offset % g->alignment)
            return ml_errf(err, ML_E_FORMAT,
                           "GGUF: tensor %.*s: data offset %llu is not a multiple of the file's alignment %u", nl,
                           t->name.s, (unsigned long long)t->offset, g->alignment);
        if (t->offset > c.size - g->data_off || t->bytes > c.size - g->data_off - t->offset)
            return ml_errf(err, ML_E_FORMAT,
                           "GGUF: tensor %.*s: %llu bytes at data offset %llu run past the end of the file (%llu "
                           "bytes; truncated?)",
                           nl, t->name.s, (unsigned long long)t->bytes, (unsigned long long)t->offset,
                           (unsigned long long)c.size);
        t->data = t->bytes ? c.p + g->data_off + t->offset : NULL;
    }
    return ML_OK;
}

ml_status ml_gguf_open(ml_gguf *g, const char *path, int use_mmap, ml_err *err) {
    memset(g, 0, sizeof *g);
    ml_status s = ml_file_open(&g->file, path, use_mmap, err);
    if (s != ML_OK) return s;
    if ((s = parse(g, err)) != ML_OK) ml_gguf_close(g);
    return s;
}

ml_status ml_gguf_parse(ml_gguf *g, const unsigned char *data, size_t size, ml_err *err) {
    memset(g, 0, sizeof *g);
    ml_file_borrow(&g->file, data, size, 0);
    ml_status s = parse(g, err);
    if (s != ML_OK) ml_gguf_close(g);
    return s;
}

/* ---- typed look-ups ------------------------------------------------------- */

static double num_at(uint32_t t, const unsigned char *p) {
    uint64_t u = le(p, (int)scalar_bytes(t));
    switch (t) {
    case ML_GGUF_U8: case ML_GGUF_U16: case ML_GGUF_U32: case ML_GGUF_U64: case ML_GGUF_BOOL: return (double)u;
    case ML_GGUF_I8: return (double)(int8_t)u;
    case ML_GGUF_I16: return (double)(int16_t)u;
    case ML_GGUF_I32: return (double)(int32_t)u;
    case ML_GGUF_I64: return (double)(int64_t)u;
    case ML_GGUF_F32: { uint32_t b = (uint32_t)u; float f; memcpy(&f, &b, 4); return f; }
    case ML_GGUF_F64: { double f; memcpy(&f, &u, 8); return f; }
    default: return NAN;
    }
}

static int is_int_type(uint32_t t) {
    return t <= ML_GGUF_I32 || t == ML_GGUF_U64 || t == ML_GGUF_I64;
}

double ml_gguf_arr_num(const ml_gguf_kv *kv, uint64_t i) {
    return num_at(kv->arr_type, kv->val + i * scalar_bytes(kv->arr_type));
}

ml_gguf_str ml_gguf_arr_next_str(const unsigned char **at) {
    ml_gguf_str s = {(const char *)*at + 8, le(*at, 8)};
    *at += 8 + s.len;
    return s;
}

ml_status ml_gguf_int(const ml_gguf *g, const char *key, int required, int64_t dflt, int64_t *v, ml_err *err) {
    const ml_gguf_kv *kv = ml_gguf_find(g, key);
    *v = dflt;
    if (!kv) return required ? ml_errf(err, ML_E_FORMAT, "GGUF: metadata key %s is missing", key) : ML_OK;
    if (!is_int_type(kv->type)) return ml_errf(err, ML_E_FORMAT, "GGUF: metadata key %s is not an integer", key);
    uint64_t u = le(kv->val, (int)scalar_bytes(kv->type));
    if (kv->type == ML_GGUF_U64 && u > INT64_MAX)
        return ml_errf(err, ML_E_FORMAT, "GGUF: metadata key %s = %llu is out of range", key, (unsigned long long)u);
    *v = kv->type == ML_GGUF_I64 || kv->type == ML_GGUF_U64 ? (int64_t)u : (int64_t)num_at(kv->type, kv->val);
    return ML_OK;
}

ml_status ml_gguf_num(const ml_gguf *g, const char *key, int required, double dflt, double *v, ml_err *err) {
    const ml_gguf_kv *kv = ml_gguf_find(g, key);
    *v = dflt;
    if (!kv) return required ? ml_errf(err, ML_E_FORMAT, "GGUF: metadata key %s is missing", key) : ML_OK;
    if (kv->type == ML_GGUF_BOOL || !scalar_bytes(kv->type))
        return ml_errf(err, ML_E_FORMAT, "GGUF: metadata key %s is not a number", key);
    *v = num_at(kv->type, kv->val);
    return ML_OK;
}

ml_status ml_gguf_bool(const ml_gguf *g, const char *key, int dflt, int *v, ml_err *err) {
    const ml_gguf_kv *kv = ml_gguf_find(g, key);
    *v = dflt;
    if (!kv) return ML_OK;
    if (kv->type != ML_GGUF_BOOL && !is_int_type(kv->type))
        return ml_errf(err, ML_E_FORMAT, "GGUF: metadata key %s is not a bool", key);
    *v = num_at(kv->type, kv->val) != 0;
    return ML_OK;
}

ml_status ml_gguf_string(const ml_gguf *g, const char *key, int required, const char *dflt, ml_gguf_str *s,
                         ml_err *err) {
    const ml_gguf_kv *kv = ml_gguf_find(g, key);
    s->s = dflt;
    s->len = dflt ? strlen(dflt) : 0;
    if (!kv) return required ? ml_errf(err, ML_E_FORMAT, "GGUF: metadata key %s is missing", key) : ML_OK;
    if (kv->type != ML_GGUF_STRING) return ml_errf(err, ML_E_FORMAT, "GGUF: metadata key %s is not a string", key);
    const unsigned char *at = kv->val;
    *s = ml_gguf_arr_next_str(&at);
    return ML_OK;
}
