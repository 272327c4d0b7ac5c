/* FP32 -> Q8_0, AVX2, bit-identical to the scalar twin, as the sse2 version
 * (the same float operations, clamp before the conversion, NaN-skipping max);
 * one block of 32 in 4 registers. The packs interleave 128-bit halves, which
 * one vpermd puts back in order. */
#include <immintrin.h>
#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/avx2/avx2_vec.h"

void ml_k_quantize_q8_avx2(ml_qact *out, const float *x, int k) {
    const __m256 sign = _mm256_set1_ps(-0.0f), half = _mm256_set1_ps(0.5f);
    const __m256 qmax = _mm256_set1_ps((float)ML_Q8_MAX), qmin = _mm256_set1_ps(-(float)ML_Q8_MAX);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int b = 0; b < k / ML_QK; b++) {
        const float *xb = x + (size_t)b * ML_QK;
        int8_t *qb = out->q + (size_t)b * ML_QK;
        __m256 v[4], m = _mm256_setzero_ps();
        for (int j = 0; j < 4; j++) {
            v[j] = _mm256_loadu_ps(xb + 8 * j);
            m = _mm256_max_ps(_mm256_andnot_ps(sign, v[j]), m);
        }
        const float amax = ml_avx2_hmax(m);
        if (!(amax >= ML_Q8_AMAX_MIN)) {
            out->d[b] = 0.0f;
            _mm256_storeu_si256((__m256i *)qb, _mm256_setzero_si256());
            continue;
        }
        const __m256 id = _mm256_set1_ps(127.0f / amax);
        out->d[b] = amax / 127.0f;
        __m256i q[4];
        for (int j = 0; j < 4; j++) {
            const __m256 t = _mm256_add_ps(_mm256_mul_ps(v[j], id), _mm256_or_ps(_mm256_and_ps(v[j], sign), half));
            q[j] = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(t, qmin), qmax));
        }
        const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        _mm256_storeu_si256((__m256i *)qb, _mm256_permutevar8x32_epi32(p, order));
    }
}
