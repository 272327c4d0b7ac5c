/* Which kernels kernels/avxvnni/ implements (1) and which fall back to the
 * next lower ISA of the chain (0). See config/ml_config.h.
 * AVX-VNNI adds only the vpdpbusd byte dot: matvec gains, everything else is
 * the avx2 code. */
#ifndef ML_KERNELS_AVXVNNI_H
#define ML_KERNELS_AVXVNNI_H

#define ML_HAS_MATVEC_Q8_AVXVNNI 1
#define ML_HAS_MATVEC_Q4_AVXVNNI 1
#define ML_HAS_MATMUL_Q8_AVXVNNI 1
#define ML_HAS_MATMUL_Q4_AVXVNNI 1
#define ML_HAS_QUANTIZE_Q8_AVXVNNI 0
#define ML_HAS_DEQUANT_ROW_Q8_AVXVNNI 0
#define ML_HAS_DEQUANT_ROW_Q4_AVXVNNI 0
#define ML_HAS_RMSNORM_AVXVNNI 0
#define ML_HAS_SOFTMAX_AVXVNNI 0
#define ML_HAS_ROPE_AVXVNNI 0
#define ML_HAS_SILU_MUL_AVXVNNI 0
#define ML_HAS_ADD_AVXVNNI 0
#define ML_HAS_DOT_F32_AVXVNNI 0
#define ML_HAS_AXPY_F32_AVXVNNI 0

#endif
