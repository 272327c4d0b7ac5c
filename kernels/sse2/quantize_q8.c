/* FP32 -> Q8_0, SSE2, bit-identical to the scalar twin: the same float
 * operations per element (x * id, + copysign(0.5, x)), the same clamp before
 * the truncating conversion (NaN -> -127, as the scalar's comparisons give),
 * and a max that skips NaN like the scalar's `a > amax` (maxps returns its
 * second operand when either is NaN). One block of 32 in 8 registers. */
#include <emmintrin.h>
#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/sse2/sse2_vec.h"

void ml_k_quantize_q8_sse2(ml_qact *out, const float *x, int k) {
    const __m128 sign = _mm_set1_ps(-0.0f), half = _mm_set1_ps(0.5f);
    const __m128 qmax = _mm_set1_ps((float)ML_Q8_MAX), qmin = _mm_set1_ps(-(float)ML_Q8_MAX);
    for (int b = 0; b < k / ML_QK; b++) {
        const float *xb = x + (size_t)b * ML_QK;
        int8_t *qb = out->q + (size_t)b * ML_QK;
        __m128 v[8], m = _mm_setzero_ps();
        for (int j = 0; j < 8; j++) {
            v[j] = _mm_loadu_ps(xb + 4 * j);
            m = _mm_max_ps(_mm_andnot_ps(sign, v[j]), m);
        }
        const float amax = ml_sse2_hmax(m);
        if (!(amax >= ML_Q8_AMAX_MIN)) {
            out->d[b] = 0.0f;
            _mm_storeu_si128((__m128i *)qb, _mm_setzero_si128());
            _mm_storeu_si128((__m128i *)(qb + 16), _mm_setzero_si128());
            continue;
        }
        const __m128 id = _mm_set1_ps(127.0f / amax);
        out->d[b] = amax / 127.0f;
        __m128i q[8];
        for (int j = 0; j < 8; j++) {
            const __m128 t = _mm_add_ps(_mm_mul_ps(v[j], id), _mm_or_ps(_mm_and_ps(v[j], sign), half));
            q[j] = _mm_cvttps_epi32(_mm_min_ps(_mm_max_ps(t, qmin), qmax));
        }
        _mm_storeu_si128((__m128i *)qb, _mm_packs_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3])));
        _mm_storeu_si128((__m128i *)(qb + 16),
                         _mm_packs_epi16(_mm_packs_epi32(q[4], q[5]), _mm_packs_epi32(q[6], q[7])));
    }
}
