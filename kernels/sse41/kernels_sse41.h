/* Which kernels kernels/sse41/ implements (1) and which fall back to the
 * next lower ISA of the chain (0). See config/ml_config.h.
 * sse41 adds only the SSSE3 byte dot (pmaddubsw) to matvec; the float kernels
 * and quantize gain nothing over sse2, so they bind to the sse2 versions. */
#ifndef ML_KERNELS_SSE41_H
#define ML_KERNELS_SSE41_H

#define ML_HAS_MATVEC_Q8_SSE41 1
#define ML_HAS_MATVEC_Q4_SSE41 1
#define ML_HAS_MATMUL_Q8_SSE41 1
#define ML_HAS_MATMUL_Q4_SSE41 1
#define ML_HAS_QUANTIZE_Q8_SSE41 0
#define ML_HAS_DEQUANT_ROW_Q8_SSE41 0
#define ML_HAS_DEQUANT_ROW_Q4_SSE41 0
#define ML_HAS_RMSNORM_SSE41 0
#define ML_HAS_SOFTMAX_SSE41 0
#define ML_HAS_ROPE_SSE41 0
#define ML_HAS_SILU_MUL_SSE41 0
#define ML_HAS_ADD_SSE41 0
#define ML_HAS_DOT_F32_SSE41 0
#define ML_HAS_AXPY_F32_SSE41 0

#endif
