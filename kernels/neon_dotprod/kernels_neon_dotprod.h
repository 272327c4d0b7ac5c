/* The kernels kernels/neon_dotprod/ implements (ML_HAS_<KERNEL>_<ISA> 1); the others
 * fall back to the next lower ISA of the chain (config/isas.txt, tools/isas.awk).
 * dotprod adds only sdot, an int8 instruction: the matvecs; everything else
 * is the neon build's. */
#ifndef ML_KERNELS_NEON_DOTPROD_H
#define ML_KERNELS_NEON_DOTPROD_H

#define ML_HAS_MATVEC_Q8_NEON_DOTPROD 1
#define ML_HAS_MATVEC_Q4_NEON_DOTPROD 1
#define ML_HAS_MATMUL_Q8_NEON_DOTPROD 1
#define ML_HAS_MATMUL_Q4_NEON_DOTPROD 1
#define ML_HAS_MATVEC_Q8_F16_NEON_DOTPROD 1
#define ML_HAS_MATVEC_Q4_F16_NEON_DOTPROD 1
#define ML_HAS_MATMUL_Q8_F16_NEON_DOTPROD 1
#define ML_HAS_MATMUL_Q4_F16_NEON_DOTPROD 1

#endif
