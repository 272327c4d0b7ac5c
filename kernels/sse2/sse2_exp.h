/* expf for 4 lanes, SSE2: the canonical exp of kernels/x86/exp_tmpl.h at
 * this width, bit-identical to the scalar twin. */
#ifndef ML_SSE2_EXP_H
#define ML_SSE2_EXP_H

#include <emmintrin.h>

#define EXP_NAME ml_sse2_exp
#define VF __m128
#define VI __m128i
#define F_SET1 _mm_set1_ps
#define F_ADD _mm_add_ps
#define F_SUB _mm_sub_ps
#define F_MUL _mm_mul_ps
#define F_MIN _mm_min_ps
#define F_MAX _mm_max_ps
#define F_CVTT _mm_cvttps_epi32
#define F_FROM_I _mm_castsi128_ps
#define I_SET1 _mm_set1_epi32
#define I_ADD _mm_add_epi32
#define I_SUB _mm_sub_epi32
#define I_SRAI _mm_srai_epi32
#define I_SLLI _mm_slli_epi32
#include "kernels/x86/exp_tmpl.h"

#endif
