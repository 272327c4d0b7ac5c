/* A GGUF file (versions 2 and 3, little-endian), read in place: header,
 * metadata key/values, tensor infos, alignment and data offsets. Every
 * count, length and offset is checked against the file before it is used,
 * so a truncated or corrupt file is ML_E_FORMAT with a message naming the
 * field, never a read past the end.
 *
 *   u32 magic "GGUF", u32 version, u64 n_tensors, u64 n_kv
 *   n_kv times:      string key, u32 type, value
 *   n_tensors times: string name, u32 n_dims, u64 ne[n_dims], u32 ggml type,
 *                    u64 offset (from the data section)
 *   padding to general.alignment (default 32), then the data section.
 * A string is u64 length then its bytes (no NUL); an array is u32 element
 * type, u64 count, then the elements. ne[0] is the fastest-varying
 * dimension: a matrix of (rows, cols) has ne = {cols, rows}. */
#ifndef ML_GGUF_H
#define ML_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "core/file.h"
#include "core/status.h"

#define ML_GGUF_MAGIC "GGUF"
#define ML_GGUF_MAX_DIMS 4
#define ML_GGUF_DEFAULT_ALIGN 32

/* Metadata value types (the file's numbering). */
typedef enum {
    ML_GGUF_U8 = 0, ML_GGUF_I8 = 1, ML_GGUF_U16 = 2, ML_GGUF_I16 = 3, ML_GGUF_U32 = 4, ML_GGUF_I32 = 5,
    ML_GGUF_F32 = 6, ML_GGUF_BOOL = 7, ML_GGUF_STRING = 8, ML_GGUF_ARRAY = 9, ML_GGUF_U64 = 10,
    ML_GGUF_I64 = 11, ML_GGUF_F64 = 12, ML_GGUF_TYPE_COUNT
} ml_gguf_type;

/* Tensor types this reader knows the size of (ggml's numbering). */
typedef enum {
    ML_GGML_F32 = 0, ML_GGML_F16 = 1, ML_GGML_Q4_0 = 2, ML_GGML_Q4_1 = 3, ML_GGML_Q5_0 = 6,
    ML_GGML_Q5_1 = 7, ML_GGML_Q8_0 = 8, ML_GGML_Q2_K = 10, ML_GGML_Q3_K = 11, ML_GGML_Q4_K = 12,
    ML_GGML_Q5_K = 13, ML_GGML_Q6_K = 14, ML_GGML_BF16 = 30,
} ml_ggml_type;

/* A string inside the file: not NUL-terminated. */
typedef struct {
    const char *s;
    uint64_t len;
} ml_gguf_str;

typedef struct {
    ml_gguf_str key;
    uint32_t type;              /* ml_gguf_type */
    uint32_t arr_type;          /* ARRAY: the element type */
    uint64_t arr_n;             /* ARRAY: the element count */
    const unsigned char *val;   /* the value (ARRAY: its first element) */
    uint64_t val_bytes;         /* bytes of the value (ARRAY: of all elements) */
} ml_gguf_kv;

typedef struct {
    ml_gguf_str name;
    uint32_t n_dims;
    uint64_t ne[ML_GGUF_MAX_DIMS]; /* unused dimensions are 1 */
    uint32_t type;                 /* ml_ggml_type (or another ggml type: bytes 0) */
    uint64_t offset;               /* from the data section, a multiple of the alignment */
    uint64_t n;                    /* elements */
    uint64_t bytes;                /* 0 for a type this reader does not size */
    const unsigned char *data;     /* NULL for a type this reader does not size */
} ml_gguf_tensor;

typedef struct {
    ml_file file;
    uint32_t version;
    uint64_t n_kv, n_tensors;
    ml_gguf_kv *kv;         /* (n_kv) */
    ml_gguf_tensor *t;      /* (n_tensors) */
    uint32_t alignment;     /* general.alignment, or 32 */
    uint64_t data_off;      /* the data section, from the file start */
} ml_gguf;

/* Map and parse path (use_mmap as ml_file_open). On failure g holds nothing. */
ml_status ml_gguf_open(ml_gguf *g, const char *path, int use_mmap, ml_err *err);
/* Parse a caller's buffer (the fuzz target); it must outlive g. */
ml_status ml_gguf_parse(ml_gguf *g, const unsigned char *data, size_t size, ml_err *err);
void ml_gguf_close(ml_gguf *g);

/* 1 if the bytes start with the GGUF magic. */
int ml_gguf_sniff(const void *head, size_t n);

/* A type this reader sizes: its block's bytes and elements (either may be
 * NULL: both or neither), and nonzero; 0 for any other type. */
int ml_gguf_type_block(uint32_t type, uint64_t *bytes, uint64_t *elems);

/* The ggml type's name ("Q4_K"), or "type N" in buf for one without a name here. */
const char *ml_gguf_type_name(uint32_t type, char *buf, size_t cap);

/* ---- metadata look-ups: NULL / ML_E_FORMAT (naming the key) when the type is wrong */
const ml_gguf_kv *ml_gguf_find(const ml_gguf *g, const char *key);
int ml_gguf_str_is(ml_gguf_str s, const char *z);
/* An integer value (any integer type, not bool): ML_OK; missing: *v = dflt
 * (ML_E_FORMAT if required). */
ml_status ml_gguf_int(const ml_gguf *g, const char *key, int required, int64_t dflt, int64_t *v, ml_err *err);
/* A number (integer or float). */
ml_status ml_gguf_num(const ml_gguf *g, const char *key, int required, double dflt, double *v, ml_err *err);
/* A bool (or an integer 0/1). */
ml_status ml_gguf_bool(const ml_gguf *g, const char *key, int dflt, int *v, ml_err *err);
/* A string; missing: s = {dflt, strlen(dflt)} (required: ML_E_FORMAT). */
ml_status ml_gguf_string(const ml_gguf *g, const char *key, int required, const char *dflt, ml_gguf_str *s,
                         ml_err *err);
/* Element i of a numeric array as a double (i < kv->arr_n, checked at parse). */
double ml_gguf_arr_num(const ml_gguf_kv *kv, uint64_t i);

/* Walk a string array: *at starts at kv->val; each call returns the next. */
ml_gguf_str ml_gguf_arr_next_str(const unsigned char **at);

const ml_gguf_tensor *ml_gguf_tensor_find(const ml_gguf *g, const char *name);

#endif
