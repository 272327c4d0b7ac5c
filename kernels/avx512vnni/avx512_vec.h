/* AVX-512 float helpers shared by this folder's kernels. */
#ifndef ML_AVX512_VEC_H
#define ML_AVX512_VEC_H

#include <immintrin.h>

#include "kernels/kernel_util.h"

/* Lane mask for the first n (< 16) floats. */
ML_INLINE __mmask16 ml_avx512_tail(int n) { return (__mmask16)((1u << n) - 1u); }

#endif
