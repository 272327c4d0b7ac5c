/* SSE2 int8 block dots (kernels/sse2/matvec_q*.c). SSE2 has no byte
 * multiply, so products go through pmaddwd on int16 lanes (the XNNPACK
 * approach, without unpacking): each 16-byte half splits into its even and
 * odd bytes in place, with shifts and masks. The activations are split once
 * per block and shared by the 4 rows of kernels/x86/matvec_tmpl.h; the
 * weights get the cheapest split that keeps every product at the same
 * power-of-two scale (256), taken off the reduced block sums by one exact
 * arithmetic shift (mv_sumi). */
#ifndef ML_SSE2_DOT_H
#define ML_SSE2_DOT_H

#include <emmintrin.h>
#include <stdint.h>

#include "core/quant.h"
#include "kernels/kernel_util.h"

/* The 4 rows' reduced dots are 256 * sumi: exact, as every product is a
 * multiple of 256. */
ML_INLINE __m128i mv_sumi(__m128i s) { return _mm_srai_epi32(s, 8); }

#endif
