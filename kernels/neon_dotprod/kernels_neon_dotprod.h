/* Which kernels kernels/neon_dotprod/ implements (1) and which fall back to the
 * next lower ISA of the chain (0). See config/ml_config.h.
 * dotprod adds only sdot, an int8 instruction: the matvecs; everything else
 * is the neon build's. */
#ifndef ML_KERNELS_NEON_DOTPROD_H
#define ML_KERNELS_NEON_DOTPROD_H

#define ML_HAS_MATVEC_Q8_NEON_DOTPROD 1
#define ML_HAS_MATVEC_Q4_NEON_DOTPROD 1
#define ML_HAS_MATMUL_Q8_NEON_DOTPROD 1
#define ML_HAS_MATMUL_Q4_NEON_DOTPROD 1
#define ML_HAS_QUANTIZE_Q8_NEON_DOTPROD 0
#define ML_HAS_DEQUANT_ROW_Q8_NEON_DOTPROD 0
#define ML_HAS_DEQUANT_ROW_Q4_NEON_DOTPROD 0
#define ML_HAS_RMSNORM_NEON_DOTPROD 0
#define ML_HAS_SOFTMAX_NEON_DOTPROD 0
#define ML_HAS_ROPE_NEON_DOTPROD 0
#define ML_HAS_SILU_MUL_NEON_DOTPROD 0
#define ML_HAS_ADD_NEON_DOTPROD 0
#define ML_HAS_DOT_F32_NEON_DOTPROD 0
#define ML_HAS_AXPY_F32_NEON_DOTPROD 0

#endif
