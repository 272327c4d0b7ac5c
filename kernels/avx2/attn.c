/* Attention over a block of keys for a group of query heads, AVX2, in the
 * canonical order (kernels/canon.h rules 2 and 6): bit-identical to the
 * scalar twin. Scores take 8 keys at a time: 8 canonical 8-lane sums, one
 * per key, folded together by one transposing fold (lane j of the result is
 * key j's rule-2 sum). Values keep an 8-float chunk of an output in a
 * register over a block of keys, adding key by key. Keys and values are
 * read once per block for every query head of the group (from L1). */
#include <immintrin.h>

#include "config/ml_kernels.h"
#include "kernels/canon.h"
#include "kernels/avx2/avx2_vec.h"

/* Rule 2's fold of 8 accumulators at once: lane j = fold8(a[j]). */
static inline __m256 fold8x8(const __m256 a[8]) {
    __m256 b[4], c[2];
    for (int j = 0; j < 4; j++) /* lanes l + l+4: a[2j] low half, a[2j+1] high */
        b[j] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * j], a[2 * j + 1], 0x20),
                             _mm256_permute2f128_ps(a[2 * j], a[2 * j + 1], 0x31));
    for (int j = 0; j < 2; j++) /* (l0+l4)+(l2+l6), (l1+l5)+(l3+l7) */
        c[j] = _mm256_add_ps(_mm256_shuffle_ps(b[2 * j], b[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(b[2 * j], b[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256 d = _mm256_add_ps(_mm256_shuffle_ps(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm256_shuffle_ps(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm256_permutevar8x32_ps(d, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)); /* keys 0 2 4 6 1 3 5 7 */
}

void ml_k_attn_scores_avx2(float *s, int lds, const float *q, int ldq, int G, const float *k, int ldk, int n,
                           int hd, float scale) {
    const int h8 = hd & ~7;
    const __m256 sc = _mm256_set1_ps(scale);
    int t = 0;
    for (; t + 8 <= n; t += 8) {
        const float *kt = k + (size_t)t * (size_t)ldk;
        for (int g = 0; g < G; g++) {
            const float *qg = q + (size_t)g * (size_t)ldq;
            __m256 acc[8];
            for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
            for (int i = 0; i < h8; i += 8) {
                const __m256 qv = _mm256_loadu_ps(qg + i);
                for (int j = 0; j < 8; j++)
                    acc[j] = _mm256_add_ps(acc[j], _mm256_mul_ps(qv, _mm256_loadu_ps(kt + (size_t)j * (size_t)ldk + i)));
            }
            float *sg = s + (size_t)g * (size_t)lds + (size_t)t;
            __m256 d = fold8x8(acc);
            if (h8 < hd) { /* the tail, element by element after the fold */
                float f[8];
                _mm256_storeu_ps(f, d);
                ml_canon_dot_tails(f, 8, qg, kt, (size_t)ldk, h8, hd);
                d = _mm256_loadu_ps(f);
            }
            _mm256_storeu_ps(sg, _mm256_div_ps(d, sc));
        }
    }
    for (; t < n; t++) /* the last n % 8 keys one by one */
        for (int g = 0; g < G; g++)
            s[(size_t)g * (size_t)lds + (size_t)t] =
                ml_k_dot_f32_avx2(q + (size_t)g * (size_t)ldq, k + (size_t)t * (size_t)ldk, hd) / scale;
}

/* Keys per block of the value sums: 16 rows of a head of 128 are 8 KiB. */
#define VBLOCK 16

void ml_k_attn_values_avx2(float *o, int ldo, const float *p, int ldp, int G, const float *v, int ldv, int n,
                           int hd) {
    const int h8 = hd & ~7;
    const __m256i tail = ml_avx2_tail(hd - h8);
    for (int t0 = 0; t0 < n; t0 += VBLOCK) {
        const int nb = n - t0 < VBLOCK ? n - t0 : VBLOCK;
        const float *vb = v + (size_t)t0 * (size_t)ldv;
        for (int g = 0; g < G; g++) {
            float *og = o + (size_t)g * (size_t)ldo;
            const float *pg = p + (size_t)g * (size_t)ldp + (size_t)t0;
            for (int i = 0; i < h8; i += 8) {
                __m256 acc = _mm256_loadu_ps(og + i);
                for (int j = 0; j < nb; j++)
                    acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(pg[j]),
                                                           _mm256_loadu_ps(vb + (size_t)j * (size_t)ldv + i)));
                _mm256_storeu_ps(og + i, acc);
            }
            if (h8 < hd) {
                __m256 acc = _mm256_maskload_ps(og + h8, tail);
                for (int j = 0; j < nb; j++)
                    acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(pg[j]),
                                                           _mm256_maskload_ps(vb + (size_t)j * (size_t)ldv + h8, tail)));
                _mm256_maskstore_ps(og + h8, tail, acc);
            }
        }
    }
}
