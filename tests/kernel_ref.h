/* Shared by tests/test_kernels.c and tests/test_quant.c: a seeded RNG,
 * 64-byte aligned buffers and tensors, the tolerance rule, and the kernels
 * redone in plain double-precision math (the oracle for the scalar twins,
 * which are in turn the oracle for every ISA build). */
#ifndef ML_KERNEL_REF_H
#define ML_KERNEL_REF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/quant.h"
#include "core/tensor.h"

/* Blocks with max|x| below this quantize to d = 0, q = 0; must equal the
 * value in kernels/scalar/quantize_q8.c (see the comment there). */
#ifndef ML_Q8_AMAX_MIN
#define ML_Q8_AMAX_MIN 1e-30f
#endif

/* ---- run options: seed and quick mode ---------------------------------- */

/* Seed from "--seed=N" or $ML_TEST_SEED (default fixed, so runs reproduce);
 * quick mode ("--quick" or $ML_TEST_QUICK=1) cuts the random repetitions for
 * valgrind and qemu runs. */
typedef struct {
    uint64_t seed;
    int quick;
} ref_opts;

static inline ref_opts ref_parse_opts(int argc, char **argv) {
    ref_opts o = {0x2545F4914F6CDD1DULL, 0};
    const char *e = getenv("ML_TEST_SEED");
    if (e && *e) o.seed = strtoull(e, NULL, 0);
    e = getenv("ML_TEST_QUICK");
    if (e && *e && strcmp(e, "0") != 0) o.quick = 1;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--seed=", 7) == 0) o.seed = strtoull(argv[i] + 7, NULL, 0);
        else if (strcmp(argv[i], "--quick") == 0) o.quick = 1;
    }
    if (o.seed == 0) o.seed = 1; /* xorshift state must be non-zero */
    return o;
}

/* ---- RNG: xorshift64*, no libm, so data is identical on every target ---- */

typedef struct { uint64_t s; } ref_rng;

static inline uint64_t ref_u64(ref_rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1DULL;
}
/* Uniform in [0, 1) with 24 random bits (exact in float). */
static inline float ref_unit(ref_rng *r) { return (float)(ref_u64(r) >> 40) * (1.0f / 16777216.0f); }
static inline float ref_uniform(ref_rng *r, float lo, float hi) { return lo + (hi - lo) * ref_unit(r); }
/* Integer in [lo, hi]. */
static inline int ref_int(ref_rng *r, int lo, int hi) {
    return lo + (int)(ref_u64(r) % (uint64_t)(hi - lo + 1));
}
/* Roughly normal (sum of 4 uniforms, variance 1): cheap and libm-free. */
static inline float ref_gauss(ref_rng *r) {
    float s = ref_unit(r) + ref_unit(r) + ref_unit(r) + ref_unit(r);
    return (s - 2.0f) * 1.7320508f;
}

/* ---- buffers ------------------------------------------------------------ */

/* 64-byte aligned, like every arena array (DESIGN §4); freed with ref_free. */
static inline void *ref_alloc(size_t bytes) {
    size_t n = (bytes + 63) / 64 * 64;
    void *p = ml_aligned_alloc(64, n);
    if (p) memset(p, 0, n ? n : 64);
    return p;
}

static inline void ref_free(void *p) { ml_aligned_free(p); }

static inline float *ref_floats(size_t n) { return (float *)ref_alloc(n * sizeof(float)); }

/* Storage of a (rows, cols) Q8_0 or Q4_0 matrix, laid out as in model/mlb.h. */
static inline ml_qtensor ref_qtensor(ml_type t, int rows, int cols) {
    ml_qtensor W;
    W.rows = rows;
    W.cols = cols;
    W.type = (uint8_t)t;
    W.stype = ML_TYPE_F32; /* fp32 storage, large enough for fp16 scales too */
    W.layout = ML_LAYOUT_ROWS;
    W.q = (int8_t *)ref_alloc((size_t)ml_quant_bytes(t, (uint64_t)rows * (uint64_t)cols));
    W.d = ref_floats((size_t)rows * (size_t)(cols / ML_QK));
    return W;
}

static inline ml_qact ref_qact(int n) {
    ml_qact a;
    a.n = n;
    a.q = (int8_t *)ref_alloc((size_t)n);
    a.d = ref_floats((size_t)(n / ML_QK));
    return a;
}

static inline void ref_qtensor_free(ml_qtensor *W) { ref_free(W->q); ref_free(W->d); }
static inline void ref_qact_free(ml_qact *a) { ref_free(a->q); ref_free(a->d); }

/* ---- tensor element access (the layout of model/mlb.h) ------------------ */

/* Integer weight value of element (r, e): int8 for Q8_0; for Q4_0 block
 * (r, e/32) byte j holds element j in the low nibble and 16+j in the high
 * nibble, each stored as value + 8. */
static inline int ref_wq(const ml_qtensor *W, int r, int e) {
    if (W->type == ML_TYPE_Q8_0) return W->q[(size_t)r * (size_t)W->cols + (size_t)e];
    const uint8_t *blk = (const uint8_t *)W->q +
                         ((size_t)r * (size_t)(W->cols / ML_QK) + (size_t)(e / ML_QK)) * ML_Q4_BLOCK_BYTES;
    int j = e % ML_QK;
    int nib = j < 16 ? (blk[j] & 0x0F) : (blk[j - 16] >> 4);
    return nib - ML_Q4_OFFSET;
}

static inline float ref_wd(const ml_qtensor *W, int r, int b) {
    const size_t i = (size_t)r * (size_t)(W->cols / ML_QK) + (size_t)b;
    return W->stype == ML_TYPE_F16 ? ml_f16_to_f32(W->dh[i]) : W->d[i];
}

/* ---- tolerance (DESIGN §7.1) -------------------------------------------- */

/* A float result passes when |got - ref| <= REF_REL * max(|ref|, floor).
 * floor is chosen per kernel (documented where it is used): for sums with
 * cancellation it is a fraction of sum|terms|, because summation order and
 * FMA legitimately move the result by a few ulp of sum|terms|, which is
 * unbounded relative to a result near 0. NaN never passes. */
#define REF_REL 1e-5

static inline int ref_close(double got, double ref, double floor) {
    double tol = REF_REL * fmax(fabs(ref), floor);
    return fabs(got - ref) <= tol; /* false for NaN */
}

static inline int ref_same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* ---- the kernels in double precision ------------------------------------ */

/* Exact integer dot of row r (d ignored): the d = 1 oracle. */
static inline int64_t ref_matvec_int_row(const ml_qtensor *W, const ml_qact *x, int r) {
    int64_t s = 0;
    for (int e = 0; e < W->cols; e++) s += (int64_t)ref_wq(W, r, e) * x->q[e];
    return s;
}

/* Row r of W x from the dequantized values; *mag = sum_b |sumi * dw * dx|. */
static inline double ref_matvec_row(const ml_qtensor *W, const ml_qact *x, int r, double *mag) {
    double s = 0.0, m = 0.0;
    for (int b = 0; b < W->cols / ML_QK; b++) {
        int64_t si = 0;
        for (int j = 0; j < ML_QK; j++) si += (int64_t)ref_wq(W, r, b * ML_QK + j) * x->q[b * ML_QK + j];
        double t = (double)si * (double)ref_wd(W, r, b) * (double)x->d[b];
        s += t;
        m += fabs(t);
    }
    if (mag) *mag = m;
    return s;
}

/* sum_b sum_j |qw qx| |dw dx|: the error scale of a kernel that converts
 * partial int32 lanes of a block to float before adding them up (instead of
 * one int32 sumi per block, DESIGN §4). Used only to explain a failure. */
static inline double ref_matvec_absprod(const ml_qtensor *W, const ml_qact *x, int r) {
    double m = 0.0;
    for (int b = 0; b < W->cols / ML_QK; b++) {
        int64_t sa = 0;
        for (int j = 0; j < ML_QK; j++) {
            int64_t p = (int64_t)ref_wq(W, r, b * ML_QK + j) * x->q[b * ML_QK + j];
            sa += p < 0 ? -p : p;
        }
        m += (double)sa * fabs((double)ref_wd(W, r, b) * (double)x->d[b]);
    }
    return m;
}

static inline void ref_rmsnorm(double *o, const float *x, const float *w, int n, float eps) {
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    double inv = 1.0 / sqrt(ss / n + (double)eps);
    for (int i = 0; i < n; i++) o[i] = (double)w[i] * inv * x[i];
}

static inline void ref_softmax(double *o, const float *x, int n) {
    double max = x[0], sum = 0.0;
    for (int i = 1; i < n; i++) max = fmax(max, x[i]);
    for (int i = 0; i < n; i++) sum += (o[i] = exp((double)x[i] - max));
    for (int i = 0; i < n; i++) o[i] /= sum;
}

static inline double ref_silu_mul(float g, float u) { return (double)g / (1.0 + exp(-(double)g)) * u; }

/* One rotated pair; *mag = |v0 c| + |v1 s| (the cancellation floor). */
static inline void ref_rope_pair(double *o0, double *o1, double *mag, float v0, float v1, float c, float s) {
    *o0 = (double)v0 * c - (double)v1 * s;
    *o1 = (double)v0 * s + (double)v1 * c;
    *mag = fabs((double)v0 * c) + fabs((double)v1 * s);
}

static inline double ref_dot(const float *a, const float *b, int n, double *mag) {
    double s = 0.0, m = 0.0;
    for (int i = 0; i < n; i++) {
        s += (double)a[i] * b[i];
        m += fabs((double)a[i] * b[i]);
    }
    if (mag) *mag = m;
    return s;
}

#endif
