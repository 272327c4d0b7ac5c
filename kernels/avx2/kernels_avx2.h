/* The kernels kernels/avx2/ implements (ML_HAS_<KERNEL>_<ISA> 1); the others
 * fall back to the next lower ISA of the chain (config/isas.txt, tools/isas.awk).
 * avx2 doubles the width (FMA stays unused: kernels/canon.h): every kernel
 * gains over sse2/sse41 (measured: matvec ~1.6x, exp-based ~2x, rope ~1.3x). */
#ifndef ML_KERNELS_AVX2_H
#define ML_KERNELS_AVX2_H

#define ML_HAS_MATVEC_Q8_AVX2 1
#define ML_HAS_MATVEC_Q4_AVX2 1
#define ML_HAS_MATMUL_Q8_AVX2 1
#define ML_HAS_MATMUL_Q4_AVX2 1
#define ML_HAS_MATVEC_Q8_F16_AVX2 1
#define ML_HAS_MATVEC_Q4_F16_AVX2 1
#define ML_HAS_MATMUL_Q8_F16_AVX2 1
#define ML_HAS_MATMUL_Q4_F16_AVX2 1
#define ML_HAS_QUANTIZE_Q8_AVX2 1
#define ML_HAS_RMSNORM_AVX2 1
#define ML_HAS_SOFTMAX_AVX2 1
#define ML_HAS_ROPE_AVX2 1
#define ML_HAS_SILU_MUL_AVX2 1
#define ML_HAS_ADD_AVX2 1
#define ML_HAS_DOT_F32_AVX2 1
#define ML_HAS_AXPY_F32_AVX2 1
#define ML_HAS_ATTN_SCORES_AVX2 1
#define ML_HAS_ATTN_VALUES_AVX2 1

#endif
