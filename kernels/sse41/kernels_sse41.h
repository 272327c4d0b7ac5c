/* The kernels kernels/sse41/ implements (ML_HAS_<KERNEL>_<ISA> 1); the others
 * fall back to the next lower ISA of the chain (config/isas.txt, tools/isas.awk).
 * sse41 adds only the SSSE3 byte dot (pmaddubsw) to matvec; the float kernels
 * and quantize gain nothing over sse2, so they bind to the sse2 versions. */
#ifndef ML_KERNELS_SSE41_H
#define ML_KERNELS_SSE41_H

#define ML_HAS_MATVEC_Q8_SSE41 1
#define ML_HAS_MATVEC_Q4_SSE41 1
#define ML_HAS_MATMUL_Q8_SSE41 1
#define ML_HAS_MATMUL_Q4_SSE41 1
#define ML_HAS_MATVEC_Q8_F16_SSE41 1
#define ML_HAS_MATVEC_Q4_F16_SSE41 1
#define ML_HAS_MATMUL_Q8_F16_SSE41 1
#define ML_HAS_MATMUL_Q4_F16_SSE41 1

#endif
