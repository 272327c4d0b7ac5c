/* The kernel registry: the one list of DESIGN §5 kernels. Prototypes for
 * every ISA, the binding in ml_config.h, the tests and the benchmark are all
 * generated from it, so a new kernel is one line here.
 *   X(return type, name, NAME, parameter list)                              */
#ifndef ML_KERNELS_H
#define ML_KERNELS_H

#include "core/tensor.h"

#define ML_KERNELS(X)                                                                         \
    X(void, matvec_q8, MATVEC_Q8, (float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1)) \
    X(void, matvec_q4, MATVEC_Q4, (float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1)) \
    X(void, quantize_q8, QUANTIZE_Q8, (ml_qact *out, const float *x, int k))                 \
    X(void, rmsnorm, RMSNORM, (float *o, const float *x, const float *w, int n, float eps))   \
    X(void, softmax, SOFTMAX, (float *x, int n))                                              \
    X(void, rope, ROPE, (float *q, float *k, const float *cos_t, const float *sin_t,           \
                         int head_dim, int n_heads, int n_kv_heads))                         \
    X(void, silu_mul, SILU_MUL, (float *g, const float *u, int n))                            \
    X(void, add, ADD, (float *y, const float *x, int n))                                      \
    X(float, dot_f32, DOT_F32, (const float *a, const float *b, int n))                       \
    X(void, axpy_f32, AXPY_F32, (float *y, float a, const float *x, int n))

/* Every ISA, lowest first; X(isa, ISA). */
#define ML_ISAS(X)                                                                           \
    X(scalar, SCALAR) X(sse2, SSE2) X(sse41, SSE41) X(avx2, AVX2) X(avxvnni, AVXVNNI)          \
    X(avx512vnni, AVX512VNNI) X(neon, NEON) X(neon_dotprod, NEON_DOTPROD) X(sve, SVE)

/* Prototypes of every kernel for every ISA (only the built chain is linked). */
#define ML_PROTO_(ret, name, NAME, params, isa) ret ml_k_##name##_##isa params;
#define ML_PROTO_scalar(r, n, N, p) ML_PROTO_(r, n, N, p, scalar)
#define ML_PROTO_sse2(r, n, N, p) ML_PROTO_(r, n, N, p, sse2)
#define ML_PROTO_sse41(r, n, N, p) ML_PROTO_(r, n, N, p, sse41)
#define ML_PROTO_avx2(r, n, N, p) ML_PROTO_(r, n, N, p, avx2)
#define ML_PROTO_avxvnni(r, n, N, p) ML_PROTO_(r, n, N, p, avxvnni)
#define ML_PROTO_avx512vnni(r, n, N, p) ML_PROTO_(r, n, N, p, avx512vnni)
#define ML_PROTO_neon(r, n, N, p) ML_PROTO_(r, n, N, p, neon)
#define ML_PROTO_neon_dotprod(r, n, N, p) ML_PROTO_(r, n, N, p, neon_dotprod)
#define ML_PROTO_sve(r, n, N, p) ML_PROTO_(r, n, N, p, sve)
ML_KERNELS(ML_PROTO_scalar)
ML_KERNELS(ML_PROTO_sse2)
ML_KERNELS(ML_PROTO_sse41)
ML_KERNELS(ML_PROTO_avx2)
ML_KERNELS(ML_PROTO_avxvnni)
ML_KERNELS(ML_PROTO_avx512vnni)
ML_KERNELS(ML_PROTO_neon)
ML_KERNELS(ML_PROTO_neon_dotprod)
ML_KERNELS(ML_PROTO_sve)

#endif
