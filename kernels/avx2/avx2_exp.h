/* expf for 8 lanes, AVX2: the canonical exp of kernels/x86/exp_tmpl.h at
 * this width, bit-identical to the scalar twin. */
#ifndef ML_AVX2_EXP_H
#define ML_AVX2_EXP_H

#include <immintrin.h>

#define EXP_NAME ml_avx2_exp
#define VF __m256
#define VI __m256i
#define F_SET1 _mm256_set1_ps
#define F_ADD _mm256_add_ps
#define F_SUB _mm256_sub_ps
#define F_MUL _mm256_mul_ps
#define F_MIN _mm256_min_ps
#define F_MAX _mm256_max_ps
#define F_CVTT _mm256_cvttps_epi32
#define F_FROM_I _mm256_castsi256_ps
#define I_SET1 _mm256_set1_epi32
#define I_ADD _mm256_add_epi32
#define I_SUB _mm256_sub_epi32
#define I_SRAI _mm256_srai_epi32
#define I_SLLI _mm256_slli_epi32
#include "kernels/x86/exp_tmpl.h"

#endif
