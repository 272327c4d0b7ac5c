/* Which kernels kernels/sve/ implements (1) and which fall back to the
 * next lower ISA of the chain (0). See config/ml_config.h. */
#ifndef ML_KERNELS_SVE_H
#define ML_KERNELS_SVE_H

#define ML_HAS_MATVEC_Q8_SVE 0
#define ML_HAS_MATVEC_Q4_SVE 0
#define ML_HAS_QUANTIZE_Q8_SVE 0
#define ML_HAS_RMSNORM_SVE 0
#define ML_HAS_SOFTMAX_SVE 0
#define ML_HAS_ROPE_SVE 0
#define ML_HAS_SILU_MUL_SVE 0
#define ML_HAS_ADD_SVE 0
#define ML_HAS_DOT_F32_SVE 0
#define ML_HAS_AXPY_F32_SVE 0

#endif
