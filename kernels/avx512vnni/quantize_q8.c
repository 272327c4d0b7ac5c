/* FP32 -> Q8_0, AVX-512, bit-identical to the scalar twin, as the sse2
 * version (the same float operations, clamp before the conversion,
 * NaN-skipping max); one block of 32 in 2 registers; vpmovsdb narrows int32
 * to int8 in order. */
#include <immintrin.h>
#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/kernel_util.h"

void ml_k_quantize_q8_avx512vnni(ml_qact *out, const float *x, int k) {
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u), half = _mm512_castps_si512(_mm512_set1_ps(0.5f));
    const __m512 qmax = _mm512_set1_ps((float)ML_Q8_MAX), qmin = _mm512_set1_ps(-(float)ML_Q8_MAX);
    for (int b = 0; b < k / ML_QK; b++) {
        const float *xb = x + (size_t)b * ML_QK;
        int8_t *qb = out->q + (size_t)b * ML_QK;
        const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
        /* maxps returns its second operand if either is NaN: NaN is skipped */
        const __m512 m = _mm512_max_ps(_mm512_abs_ps(v1), _mm512_max_ps(_mm512_abs_ps(v0), _mm512_setzero_ps()));
        const float amax = _mm512_reduce_max_ps(m);
        if (!(amax >= ML_Q8_AMAX_MIN)) {
            out->d[b] = 0.0f;
            _mm256_storeu_si256((__m256i *)qb, _mm256_setzero_si256());
            continue;
        }
        const __m512 id = _mm512_set1_ps(127.0f / amax);
        out->d[b] = amax / 127.0f;
        /* copysign(0.5, x): x's sign bit on 0.5 */
        const __m512 h0 = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(sign, _mm512_castps_si512(v0), half, 0xEA));
        const __m512 h1 = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(sign, _mm512_castps_si512(v1), half, 0xEA));
        const __m512 t0 = _mm512_add_ps(_mm512_mul_ps(v0, id), h0), t1 = _mm512_add_ps(_mm512_mul_ps(v1, id), h1);
        const __m512i q0 = _mm512_cvttps_epi32(_mm512_min_ps(_mm512_max_ps(t0, qmin), qmax));
        const __m512i q1 = _mm512_cvttps_epi32(_mm512_min_ps(_mm512_max_ps(t1, qmin), qmax));
        _mm_storeu_si128((__m128i *)qb, _mm512_cvtsepi32_epi8(q0));
        _mm_storeu_si128((__m128i *)(qb + 16), _mm512_cvtsepi32_epi8(q1));
    }
}
