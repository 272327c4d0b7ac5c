/* Which kernels kernels/neon/ implements (1) and which fall back to the
 * next lower ISA of the chain (0). See config/ml_config.h.
 * AArch64 NEON is IEEE: all ten kernels. ARMv7 NEON flushes denormals to
 * zero and returns the default NaN, where the scalar build's VFP does
 * neither (kernels/canon.h, ARM rule 5): there only the kernels whose NEON
 * work is integer or provably denormal-free are vectorized (both matvecs:
 * integer dot, VFP float part; quantize_q8), and the float kernels are the
 * scalar twins. Each float kernel's file is compiled empty on ARMv7. */
#ifndef ML_KERNELS_NEON_H
#define ML_KERNELS_NEON_H

#ifdef __aarch64__
#define ML_NEON_IEEE 1
#else
#define ML_NEON_IEEE 0
#endif

#define ML_HAS_MATVEC_Q8_NEON 1
#define ML_HAS_MATVEC_Q4_NEON 1
#define ML_HAS_MATMUL_Q8_NEON 1
#define ML_HAS_MATMUL_Q4_NEON 1
#define ML_HAS_QUANTIZE_Q8_NEON 1
#define ML_HAS_DEQUANT_ROW_Q8_NEON 0
#define ML_HAS_DEQUANT_ROW_Q4_NEON 0
#define ML_HAS_RMSNORM_NEON ML_NEON_IEEE
#define ML_HAS_SOFTMAX_NEON ML_NEON_IEEE
#define ML_HAS_ROPE_NEON ML_NEON_IEEE
#define ML_HAS_SILU_MUL_NEON ML_NEON_IEEE
#define ML_HAS_ADD_NEON ML_NEON_IEEE
#define ML_HAS_DOT_F32_NEON ML_NEON_IEEE
#define ML_HAS_AXPY_F32_NEON ML_NEON_IEEE

#endif
