/* SSSE3 int8 block dots (kernels/sse41/matvec_q*.c; the sse41 build's gain
 * over sse2): pmaddubsw multiplies unsigned by signed bytes and adds pairs
 * into int16, so one instruction does the work of sse2's shifts and two
 * pmaddwd. Its dots are the plain int32 sums (unlike sse2's, scaled by 256). */
#ifndef ML_SSE41_DOT_H
#define ML_SSE41_DOT_H

#include <stdint.h>
#include <tmmintrin.h>

#include "core/quant.h"
#include "kernels/kernel_util.h"

/* The 4 rows' reduced dots are the sumi already. */
ML_INLINE __m128i mv_sumi(__m128i s) { return s; }

#endif
