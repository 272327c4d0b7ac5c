/* The kernel registry: the one list of DESIGN §5 kernels. Generated from it:
 * the prototypes of every ISA (below), the binding and the capability defaults
 * (tools/isas.awk reads the X lines: $(BUILD)/gen/ml_bind_gen.h, ml_isas_gen.h),
 * the binding check of tests/test_kernels.c and the kernel list of the guard.
 * A new kernel is one line here, its scalar twin, and a line in the
 * kernels_<isa>.h of each folder that implements it. The _f16 kernels take
 * weights whose block scales are fp16 (W->stype ML_TYPE_F16, W->dh); the
 * others fp32 scales (W->d). Activations always have fp32 scales.
 * weight_layout names the layout (core/tensor.h) the build's matvec and
 * matmul read fastest for a weight and scale type: the loader rearranges
 * the weights it owns into it once (core/pack.h); that build's matvec and
 * matmul read either layout, every other kernel only ML_LAYOUT_ROWS.
 *   X(return type, name, NAME, parameter list), one kernel per line          */
#ifndef ML_KERNELS_H
#define ML_KERNELS_H

#include "core/tensor.h"

#define ML_KERNELS(X) ML_KERNEL_LIST(ML_KERNEL_CALL_, X)
#define ML_KERNEL_CALL_(ret, name, NAME, params, X) X(ret, name, NAME, params)

/* The list itself, passing `extra` to each X (the ISA, for the prototypes below). */
#define ML_KERNEL_LIST(X, extra)                                                                    \
    X(void, matvec_q8, MATVEC_Q8, (float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1), extra) \
    X(void, matvec_q4, MATVEC_Q4, (float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1), extra) \
    X(void, matmul_q8, MATMUL_Q8, (float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1), extra) \
    X(void, matmul_q4, MATMUL_Q4, (float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1), extra) \
    X(void, matvec_q8_f16, MATVEC_Q8_F16, (float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1), extra) \
    X(void, matvec_q4_f16, MATVEC_Q4_F16, (float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1), extra) \
    X(void, matmul_q8_f16, MATMUL_Q8_F16, (float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1), extra) \
    X(void, matmul_q4_f16, MATMUL_Q4_F16, (float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1), extra) \
    X(int, weight_layout, WEIGHT_LAYOUT, (int type, int stype), extra) \
    X(void, quantize_q8, QUANTIZE_Q8, (ml_qact *out, const float *x, int k), extra) \
    X(void, dequant_row_q8, DEQUANT_ROW_Q8, (float *out, const ml_qtensor *W, int row), extra) \
    X(void, dequant_row_q4, DEQUANT_ROW_Q4, (float *out, const ml_qtensor *W, int row), extra) \
    X(void, dequant_row_q8_f16, DEQUANT_ROW_Q8_F16, (float *out, const ml_qtensor *W, int row), extra) \
    X(void, dequant_row_q4_f16, DEQUANT_ROW_Q4_F16, (float *out, const ml_qtensor *W, int row), extra) \
    X(void, rmsnorm, RMSNORM, (float *o, const float *x, const float *w, int n, float eps), extra) \
    X(void, softmax, SOFTMAX, (float *x, int n), extra) \
    X(void, rope, ROPE, (float *q, float *k, const float *cos_t, const float *sin_t,              \
                         int head_dim, int n_heads, int n_kv_heads), extra) \
    X(void, silu_mul, SILU_MUL, (float *g, const float *u, int n), extra) \
    X(void, add, ADD, (float *y, const float *x, int n), extra) \
    X(float, dot_f32, DOT_F32, (const float *a, const float *b, int n), extra) \
    X(void, axpy_f32, AXPY_F32, (float *y, float a, const float *x, int n), extra) \
    X(void, attn_scores, ATTN_SCORES, (float *s, int lds, const float *q, int ldq, int G, const float *k, int ldk, \
                                       int n, int hd, float scale), extra) \
    X(void, attn_values, ATTN_VALUES, (float *o, int ldo, const float *p, int ldp, int G, const float *v, int ldv, \
                                       int n, int hd), extra)

#define ML_KERNEL_ONE_(ret, name, NAME, params) +1
enum { ML_KERNEL_COUNT = 0 ML_KERNELS(ML_KERNEL_ONE_) };

/* Every ISA of the registry (config/isas.txt), as ML_ISAS(X); generated per build. */
#include "ml_isas_gen.h"

/* tools/isas.awk found every kernel of the list (one X( line each). */
_Static_assert(ML_KERNEL_COUNT == ML_KERNEL_N, "tools/isas.awk misread config/ml_kernels.h");

/* Prototypes of every kernel for every ISA (only the built chain is linked). */
#define ML_PROTO_(ret, name, NAME, params, isa) ret ml_k_##name##_##isa params;
#define ML_PROTOS_(isa, ISA, parent, archs, needs) ML_KERNEL_LIST(ML_PROTO_, isa)
ML_ISAS(ML_PROTOS_)

#endif
