/* The kernels kernels/sve/ implements (ML_HAS_<KERNEL>_<ISA> 1); the others
 * fall back to the next lower ISA of the chain (config/isas.txt, tools/isas.awk).
 * sve has the two matvecs and the two matmuls (rows in lanes at any vector
 * length, sve_matvec.h, sve_matmul.h), where nearly all of a token's
 * instructions go. The float
 * kernels stay with neon: the sums (dot_f32, rmsnorm, softmax) are fixed at
 * 8 lanes by kernels/canon.h rule 2, so a wider vector cannot shorten them,
 * and the element-wise ones (add, axpy, silu_mul, rope) handle dim- and
 * head_dim-sized vectors, a few thousand floats per token. */
#ifndef ML_KERNELS_SVE_H
#define ML_KERNELS_SVE_H

#define ML_HAS_MATVEC_Q8_SVE 1
#define ML_HAS_MATVEC_Q4_SVE 1
#define ML_HAS_MATMUL_Q8_SVE 1
#define ML_HAS_MATMUL_Q4_SVE 1
#define ML_HAS_MATVEC_Q8_F16_SVE 1
#define ML_HAS_MATVEC_Q4_F16_SVE 1
#define ML_HAS_MATMUL_Q8_F16_SVE 1
#define ML_HAS_MATMUL_Q4_F16_SVE 1

#endif
