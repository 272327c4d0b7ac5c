/* Which kernels kernels/neon/ implements (1) and which fall back to the
 * next lower ISA of the chain (0). See config/ml_config.h. */
#ifndef ML_KERNELS_NEON_H
#define ML_KERNELS_NEON_H

#define ML_HAS_MATVEC_Q8_NEON 0
#define ML_HAS_MATVEC_Q4_NEON 0
#define ML_HAS_QUANTIZE_Q8_NEON 0
#define ML_HAS_RMSNORM_NEON 0
#define ML_HAS_SOFTMAX_NEON 0
#define ML_HAS_ROPE_NEON 0
#define ML_HAS_SILU_MUL_NEON 0
#define ML_HAS_ADD_NEON 0
#define ML_HAS_DOT_F32_NEON 0
#define ML_HAS_AXPY_F32_NEON 0

#endif
