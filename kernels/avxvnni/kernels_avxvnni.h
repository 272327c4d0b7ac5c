/* The kernels kernels/avxvnni/ implements (ML_HAS_<KERNEL>_<ISA> 1); the others
 * fall back to the next lower ISA of the chain (config/isas.txt, tools/isas.awk).
 * AVX-VNNI adds only the vpdpbusd byte dot: matvec gains, everything else is
 * the avx2 code. */
#ifndef ML_KERNELS_AVXVNNI_H
#define ML_KERNELS_AVXVNNI_H

#define ML_HAS_MATVEC_Q8_AVXVNNI 1
#define ML_HAS_MATVEC_Q4_AVXVNNI 1
#define ML_HAS_MATMUL_Q8_AVXVNNI 1
#define ML_HAS_MATMUL_Q4_AVXVNNI 1
#define ML_HAS_MATVEC_Q8_F16_AVXVNNI 1
#define ML_HAS_MATVEC_Q4_F16_AVXVNNI 1
#define ML_HAS_MATMUL_Q8_F16_AVXVNNI 1
#define ML_HAS_MATMUL_Q4_F16_AVXVNNI 1

#endif
