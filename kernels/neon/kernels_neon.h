/* The kernels kernels/neon/ implements (ML_HAS_<KERNEL>_<ISA> 1); the others
 * fall back to the next lower ISA of the chain (config/isas.txt, tools/isas.awk).
 * AArch64 NEON is IEEE: every kernel. ARMv7 NEON flushes denormals to
 * zero and returns the default NaN, where the scalar build's VFP does
 * neither (kernels/canon.h, ARM rule 5): there only the kernels whose NEON
 * work is integer or provably denormal-free are vectorized (both matvecs:
 * integer dot, VFP float part; quantize_q8), and the float kernels are the
 * scalar twins. Each float kernel's file is compiled empty on ARMv7. */
#ifndef ML_KERNELS_NEON_H
#define ML_KERNELS_NEON_H

#define ML_HAS_MATVEC_Q8_NEON 1
#define ML_HAS_MATVEC_Q4_NEON 1
#define ML_HAS_MATMUL_Q8_NEON 1
#define ML_HAS_MATMUL_Q4_NEON 1
#define ML_HAS_MATVEC_Q8_F16_NEON 1
#define ML_HAS_MATVEC_Q4_F16_NEON 1
#define ML_HAS_MATMUL_Q8_F16_NEON 1
#define ML_HAS_MATMUL_Q4_F16_NEON 1
#define ML_HAS_QUANTIZE_Q8_NEON 1

/* The float kernels: AArch64 only (tools/isas.awk reads this condition too). */
#ifdef __aarch64__
#define ML_NEON_IEEE 1
#define ML_HAS_RMSNORM_NEON 1
#define ML_HAS_SOFTMAX_NEON 1
#define ML_HAS_ROPE_NEON 1
#define ML_HAS_SILU_MUL_NEON 1
#define ML_HAS_ADD_NEON 1
#define ML_HAS_DOT_F32_NEON 1
#define ML_HAS_AXPY_F32_NEON 1
#define ML_HAS_ATTN_SCORES_NEON 1
#define ML_HAS_ATTN_VALUES_NEON 1
#else
#define ML_NEON_IEEE 0
#endif

#endif
