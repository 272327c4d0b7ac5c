/* RoPE on interleaved pairs, AVX2: 4 pairs per register,
 *   out = v * [c0 c0 c1 c1 ..] + [v1 v0 v3 v2 ..] * [-s0 s0 -s1 s1 ..]
 * bit-identical to the scalar twin (no FMA; see kernels/sse2/rope.c). The
 * cos/sin vectors depend only on the pair index: chunks outside, heads inside.
 * A head_dim/2 that is not a multiple of 4 finishes pair by pair with the
 * scalar twin's formula (ml_canon_rope_pair). */
#include <immintrin.h>
#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/canon.h"

static inline __m256 rot(__m256 v, __m256 cc, __m256 ss) {
    return _mm256_add_ps(_mm256_mul_ps(v, cc), _mm256_mul_ps(_mm256_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)), ss));
}

static void rope_heads(float *v, const float *cos_t, const float *sin_t, int head_dim, int heads) {
    const int half = head_dim / 2;
    const size_t hd = (size_t)head_dim;
    const __m256 neg_even = _mm256_castsi256_ps(_mm256_set1_epi64x((long long)0x80000000u));
    const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
    int i = 0;
    for (; i + 4 <= half; i += 4) {
        const __m256 cc = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(cos_t + i)), dup);
        const __m256 ss = _mm256_xor_ps(
            _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(sin_t + i)), dup), neg_even);
        for (int h = 0; h < heads; h++) {
            float *p = v + (size_t)h * hd + 2 * (size_t)i;
            _mm256_storeu_ps(p, rot(_mm256_loadu_ps(p), cc, ss));
        }
    }
    for (; i < half; i++) /* the pairs past the last chunk */
        for (int h = 0; h < heads; h++) ml_canon_rope_pair(v + (size_t)h * hd + 2 * (size_t)i, cos_t[i], sin_t[i]);
}

void ml_k_rope_avx2(float *q, float *k, const float *cos_t, const float *sin_t, int head_dim, int n_heads,
                    int n_kv_heads) {
    rope_heads(q, cos_t, sin_t, head_dim, n_heads);
    if (k) rope_heads(k, cos_t, sin_t, head_dim, n_kv_heads);
}
