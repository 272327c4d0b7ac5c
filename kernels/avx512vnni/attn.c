/* Attention, AVX-512. Values: the shared body's values (kernels/attn_body.h)
 * over 16-lane vectors, half the instructions of avx2's per key (2.1-2.4x
 * avx2's speed in `ml_bench --kernels-only`, head size 64, 4 heads). An
 * output element adds p_t * v_t key by key in any lane, so it is
 * bit-identical to the scalar twin (kernels/canon.h rule 6). A head size
 * that is not a multiple of 16 goes to avx2's 8-lane chunks.
 *
 * Scores: a rule-2 score is one 8-lane set per key, so a 16-lane vector
 * holds two keys, key j in the low half and key j + 8 in the high half,
 * against the query's 8 elements in both halves. A tile of 16 keys is 8
 * such accumulators; avx2's transposing fold, done in both 256-bit halves
 * at once, leaves key j in lane j, and one division serves 16 keys: half
 * the multiply-adds, folds and divisions of avx2's two 8-key tiles. Two
 * queries share each pair of key chunks (the inserts that build it are
 * shuffles, as many as the multiplies). The last n % 16 keys are one
 * short tile that repeats its last key in the missing lanes (computed,
 * never stored; nothing past the last key is read): avx2's 8-key tiles
 * there cost a fifth of stories260K's scores (head size 8, ~230 keys). */
#include <immintrin.h>

#include "config/ml_kernels.h"
#include "kernels/avx512vnni/avx512_vec.h"
#include "kernels/kernel_util.h"

typedef __m512 ml_vf;

ML_INLINE __m512 ml_vf_load(const float *p) { return _mm512_loadu_ps(p); }
ML_INLINE void ml_vf_store(float *p, __m512 v) { _mm512_storeu_ps(p, v); }
ML_INLINE __m512 ml_vf_set1(float c) { return _mm512_set1_ps(c); }
ML_INLINE __m512 ml_vf_madd(__m512 acc, __m512 a, __m512 b) { return _mm512_add_ps(acc, _mm512_mul_ps(a, b)); }

#define ML_ATTN_VALUES_ONLY
#include "kernels/attn_body.h"

/* Two 8-element chunks at a and b: a in the low half, b in the high. */
ML_INLINE __m512 attn_pair(const float *a, const float *b) {
    const __m512d lo = _mm512_castps_pd(_mm512_castps256_ps512(_mm256_loadu_ps(a)));
    return _mm512_castpd_ps(_mm512_insertf64x4(lo, _mm256_castps_pd(_mm256_loadu_ps(b)), 1));
}

/* avx2's ml_vf_fold_keys in each 256-bit half: lane j (< 8) = fold8 of
 * a[j]'s low half, lane 8 + j = fold8 of a[j]'s high half. */
ML_INLINE __m512 attn_fold16(const __m512 *a) {
    /* per half, (x.lo128, y.lo128) and (x.hi128, y.hi128): _mm256_permute2f128_ps 0x20 and 0x31 */
    const __m512i lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
    const __m512i hi = _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
    __m512 b[4], c[2];
    ML_UNROLL for (int j = 0; j < 4; j++) /* lanes l + l+4 */
        b[j] = _mm512_add_ps(_mm512_permutex2var_ps(a[2 * j], lo, a[2 * j + 1]),
                             _mm512_permutex2var_ps(a[2 * j], hi, a[2 * j + 1]));
    ML_UNROLL for (int j = 0; j < 2; j++) /* (l0+l4)+(l2+l6), (l1+l5)+(l3+l7) */
        c[j] = _mm512_add_ps(_mm512_shuffle_ps(b[2 * j], b[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(b[2 * j], b[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 d = _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(c[0], c[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15), d);
}

/* s[q*lds + 0 .. nk-1] = the scores of the nq (1 or 2) queries at q, ldq
 * apart, against the nk (<= 16) keys at kt, rows ldk apart (nq and, for
 * whole tiles, nk are constants after inlining): each pair of key chunks is
 * built once for both queries. */
ML_INLINE void attn_score_tile16(float *s, size_t lds, const float *q, size_t ldq, int nq, const float *kt, size_t ldk,
                                 int nk, int h8, int hd, __m512 sc) {
    const float *kj[16];
    ML_UNROLL for (int j = 0; j < 16; j++) kj[j] = kt + (size_t)(j < nk ? j : nk - 1) * ldk;
    __m512 acc[2][8];
    ML_UNROLL for (int g = 0; g < nq; g++)
        ML_UNROLL for (int j = 0; j < 8; j++) acc[g][j] = _mm512_setzero_ps();
    for (int i = 0; i < h8; i += 8) {
        __m512 qv[2];
        ML_UNROLL for (int g = 0; g < nq; g++)
            qv[g] = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(q + (size_t)g * ldq + i))));
        ML_UNROLL for (int j = 0; j < 8; j++) {
            const __m512 kp = attn_pair(kj[j] + i, kj[j + 8] + i);
            ML_UNROLL for (int g = 0; g < nq; g++) acc[g][j] = _mm512_add_ps(acc[g][j], _mm512_mul_ps(qv[g], kp));
        }
    }
    ML_UNROLL for (int g = 0; g < nq; g++) {
        const float *qg = q + (size_t)g * ldq;
        __m512 d = attn_fold16(acc[g]);
        if (h8 < hd) { /* rule 2's tail, element by element after the fold */
            float f[16];
            _mm512_storeu_ps(f, d);
            for (int j = 0; j < nk; j++)
                for (int i = h8; i < hd; i++) f[j] += qg[i] * kj[j][i];
            d = _mm512_loadu_ps(f);
        }
        _mm512_mask_storeu_ps(s + (size_t)g * lds, ml_avx512_tail(nk), _mm512_div_ps(d, sc));
    }
}

/* The nk keys at kt for every query of the set, two queries at a time. */
ML_INLINE void attn_score_keys(float *s, size_t lds, const float *q, size_t ldq, int G, const float *kt, size_t ldk,
                               int nk, int h8, int hd, __m512 sc) {
    int g = 0;
    for (; g + 2 <= G; g += 2)
        attn_score_tile16(s + (size_t)g * lds, lds, q + (size_t)g * ldq, ldq, 2, kt, ldk, nk, h8, hd, sc);
    if (g < G) attn_score_tile16(s + (size_t)g * lds, lds, q + (size_t)g * ldq, ldq, 1, kt, ldk, nk, h8, hd, sc);
}

void ml_k_attn_scores_avx512vnni(float *s, int lds, const float *q, int ldq, int G, const float *k, int ldk, int n,
                                 int hd, float scale) {
    const int h8 = hd & ~7, n16 = n & ~15;
    const __m512 sc = _mm512_set1_ps(scale);
    for (int t = 0; t < n16; t += 16)
        attn_score_keys(s + t, (size_t)lds, q, (size_t)ldq, G, k + (size_t)t * (size_t)ldk, (size_t)ldk, 16, h8, hd,
                        sc);
    if (n16 < n)
        attn_score_keys(s + n16, (size_t)lds, q, (size_t)ldq, G, k + (size_t)n16 * (size_t)ldk, (size_t)ldk, n - n16,
                        h8, hd, sc);
}

void ml_k_attn_values_avx512vnni(float *o, int ldo, const float *p, int ldp, int G, const float *v, int ldv, int n,
                                 int hd) {
    if (hd % 16) {
        ml_k_attn_values_avx2(o, ldo, p, ldp, G, v, ldv, n, hd);
        return;
    }
    ml_attn_values(o, ldo, p, ldp, G, v, ldv, n, hd);
}
