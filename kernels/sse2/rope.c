/* RoPE on interleaved pairs, SSE2. For 2 pairs (one vector [v0 v1 v2 v3]):
 *   out = v * [c0 c0 c1 c1] + [v1 v0 v3 v2] * [-s0 s0 -s1 s1]
 * which rounds exactly like the scalar twin (v0*c - v1*s, v0*s + v1*c: the
 * negation is exact and the add commutes), so results are bit-identical.
 * The cos/sin vectors depend only on the pair index, so the loop runs over
 * pair chunks outside and heads inside, building them once per chunk. */
#include <emmintrin.h>
#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/canon.h"

static inline __m128 rot(__m128 v, __m128 cc, __m128 ss) {
    return _mm_add_ps(_mm_mul_ps(v, cc), _mm_mul_ps(_mm_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1)), ss));
}

static void rope_heads(float *v, const float *cos_t, const float *sin_t, int head_dim, int heads) {
    const int half = head_dim / 2;
    const size_t hd = (size_t)head_dim;
    const __m128 neg_even = _mm_castsi128_ps(_mm_set_epi32(0, (int)0x80000000u, 0, (int)0x80000000u));
    int i = 0;
    for (; i + 4 <= half; i += 4) {
        const __m128 c = _mm_loadu_ps(cos_t + i), sn = _mm_loadu_ps(sin_t + i);
        const __m128 c0 = _mm_unpacklo_ps(c, c), c1 = _mm_unpackhi_ps(c, c);
        const __m128 s0 = _mm_xor_ps(_mm_unpacklo_ps(sn, sn), neg_even);
        const __m128 s1 = _mm_xor_ps(_mm_unpackhi_ps(sn, sn), neg_even);
        for (int h = 0; h < heads; h++) {
            float *p = v + (size_t)h * hd + 2 * (size_t)i;
            _mm_storeu_ps(p, rot(_mm_loadu_ps(p), c0, s0));
            _mm_storeu_ps(p + 4, rot(_mm_loadu_ps(p + 4), c1, s1));
        }
    }
    for (; i < half; i++) /* the pairs past the last chunk */
        for (int h = 0; h < heads; h++) ml_canon_rope_pair(v + (size_t)h * hd + 2 * (size_t)i, cos_t[i], sin_t[i]);
}

void ml_k_rope_sse2(float *q, float *k, const float *cos_t, const float *sin_t, int head_dim, int n_heads,
                    int n_kv_heads) {
    rope_heads(q, cos_t, sin_t, head_dim, n_heads);
    if (k) rope_heads(k, cos_t, sin_t, head_dim, n_kv_heads);
}
