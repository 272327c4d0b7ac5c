/* The kernels kernels/sse2/ implements (ML_HAS_<KERNEL>_<ISA> 1); the others
 * fall back to the next lower ISA of the chain (config/isas.txt, tools/isas.awk).
 * sse2 is the x86-64 floor: every kernel gains from 4-wide SIMD over scalar
 * (measured: matvec 3-7x, the float kernels 2-5x), so all are here. */
#ifndef ML_KERNELS_SSE2_H
#define ML_KERNELS_SSE2_H

#define ML_HAS_MATVEC_Q8_SSE2 1
#define ML_HAS_MATVEC_Q4_SSE2 1
#define ML_HAS_MATMUL_Q8_SSE2 1
#define ML_HAS_MATMUL_Q4_SSE2 1
#define ML_HAS_MATVEC_Q8_F16_SSE2 1
#define ML_HAS_MATVEC_Q4_F16_SSE2 1
#define ML_HAS_MATMUL_Q8_F16_SSE2 1
#define ML_HAS_MATMUL_Q4_F16_SSE2 1
#define ML_HAS_QUANTIZE_Q8_SSE2 1
#define ML_HAS_RMSNORM_SSE2 1
#define ML_HAS_SOFTMAX_SSE2 1
#define ML_HAS_ROPE_SSE2 1
#define ML_HAS_SILU_MUL_SSE2 1
#define ML_HAS_ADD_SSE2 1
#define ML_HAS_DOT_F32_SSE2 1
#define ML_HAS_AXPY_F32_SSE2 1
#define ML_HAS_ATTN_SCORES_SSE2 1
#define ML_HAS_ATTN_VALUES_SSE2 1

#endif
