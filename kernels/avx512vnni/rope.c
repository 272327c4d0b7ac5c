/* RoPE on interleaved pairs, AVX-512: 8 pairs per register,
 *   out = v * [c0 c0 c1 c1 ..] + [v1 v0 v3 v2 ..] * [-s0 s0 -s1 s1 ..]
 * bit-identical to the scalar twin (no FMA; see kernels/sse2/rope.c). The
 * cos/sin vectors depend only on the pair index: chunks outside, heads inside;
 * a last chunk of fewer than 8 pairs is masked. */
#include <immintrin.h>
#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/avx512vnni/avx512_vec.h"

static void rope_heads(float *v, const float *cos_t, const float *sin_t, int head_dim, int heads) {
    const int half = head_dim / 2;
    const size_t hd = (size_t)head_dim;
    const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m512i neg_even = _mm512_set1_epi64((long long)0x80000000u);
    for (int i = 0; i < half; i += 8) {
        const int np = half - i < 8 ? half - i : 8;
        const __mmask8 mp = (__mmask8)((1u << np) - 1u);
        const __mmask16 mf = (__mmask16)((1u << (2 * np)) - 1u);
        const __m512 cc = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(mp, cos_t + i)));
        const __m512 sn = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(mp, sin_t + i)));
        const __m512 ss = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(sn), neg_even));
        for (int h = 0; h < heads; h++) {
            float *p = v + (size_t)h * hd + 2 * (size_t)i;
            const __m512 x = _mm512_maskz_loadu_ps(mf, p);
            const __m512 r = _mm512_add_ps(_mm512_mul_ps(x, cc), _mm512_mul_ps(_mm512_permute_ps(x, _MM_SHUFFLE(2, 3, 0, 1)), ss));
            _mm512_mask_storeu_ps(p, mf, r);
        }
    }
}

void ml_k_rope_avx512vnni(float *q, float *k, const float *cos_t, const float *sin_t, int head_dim, int n_heads,
                          int n_kv_heads) {
    rope_heads(q, cos_t, sin_t, head_dim, n_heads);
    if (k) rope_heads(k, cos_t, sin_t, head_dim, n_kv_heads);
}
