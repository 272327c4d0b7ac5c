/* Attention over a block of keys for a group of query heads, SSE2, in the
 * canonical order (kernels/canon.h rules 2 and 6): bit-identical to the
 * scalar twin. Scores take 4 keys at a time, each key's 8 lanes in two
 * registers; the 4 sums are folded together by a 4x4 transpose. Values keep
 * a 4-float chunk of an output in a register over a block of keys. */
#include <emmintrin.h>

#include "config/ml_kernels.h"
#include "kernels/canon.h"
#include "kernels/sse2/sse2_vec.h"

void ml_k_attn_scores_sse2(float *s, int lds, const float *q, int ldq, int G, const float *k, int ldk, int n,
                           int hd, float scale) {
    const int h8 = hd & ~7;
    const __m128 sc = _mm_set1_ps(scale);
    int t = 0;
    for (; t + 4 <= n; t += 4) {
        const float *kt = k + (size_t)t * (size_t)ldk;
        for (int g = 0; g < G; g++) {
            const float *qg = q + (size_t)g * (size_t)ldq;
            __m128 lo[4], hi[4];
            for (int j = 0; j < 4; j++) lo[j] = hi[j] = _mm_setzero_ps();
            for (int i = 0; i < h8; i += 8) {
                const __m128 q0 = _mm_loadu_ps(qg + i), q1 = _mm_loadu_ps(qg + i + 4);
                for (int j = 0; j < 4; j++) {
                    const float *kj = kt + (size_t)j * (size_t)ldk + i;
                    lo[j] = _mm_add_ps(lo[j], _mm_mul_ps(q0, _mm_loadu_ps(kj)));
                    hi[j] = _mm_add_ps(hi[j], _mm_mul_ps(q1, _mm_loadu_ps(kj + 4)));
                }
            }
            /* x = l0+l4, l1+l5, l2+l6, l3+l7 per key; transposed, the sum
             * (x0 + x2) + (x1 + x3) of each key lands in its lane */
            __m128 x0 = _mm_add_ps(lo[0], hi[0]), x1 = _mm_add_ps(lo[1], hi[1]);
            __m128 x2 = _mm_add_ps(lo[2], hi[2]), x3 = _mm_add_ps(lo[3], hi[3]);
            _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
            __m128 d = _mm_add_ps(_mm_add_ps(x0, x2), _mm_add_ps(x1, x3));
            float *sg = s + (size_t)g * (size_t)lds + (size_t)t;
            if (h8 < hd) { /* the tail, element by element after the fold */
                float f[4];
                _mm_storeu_ps(f, d);
                ml_canon_dot_tails(f, 4, qg, kt, (size_t)ldk, h8, hd);
                d = _mm_loadu_ps(f);
            }
            _mm_storeu_ps(sg, _mm_div_ps(d, sc));
        }
    }
    for (; t < n; t++) /* the last n % 4 keys one by one */
        for (int g = 0; g < G; g++)
            s[(size_t)g * (size_t)lds + (size_t)t] =
                ml_k_dot_f32_sse2(q + (size_t)g * (size_t)ldq, k + (size_t)t * (size_t)ldk, hd) / scale;
}

/* Keys per block of the value sums: 16 rows of a head of 128 are 8 KiB. */
#define VBLOCK 16

void ml_k_attn_values_sse2(float *o, int ldo, const float *p, int ldp, int G, const float *v, int ldv, int n,
                           int hd) {
    const int h4 = hd & ~3;
    for (int t0 = 0; t0 < n; t0 += VBLOCK) {
        const int nb = n - t0 < VBLOCK ? n - t0 : VBLOCK;
        const float *vb = v + (size_t)t0 * (size_t)ldv;
        for (int g = 0; g < G; g++) {
            float *og = o + (size_t)g * (size_t)ldo;
            const float *pg = p + (size_t)g * (size_t)ldp + (size_t)t0;
            int i = 0;
            for (; i + 8 <= h4; i += 8) {
                __m128 a0 = _mm_loadu_ps(og + i), a1 = _mm_loadu_ps(og + i + 4);
                for (int j = 0; j < nb; j++) {
                    const __m128 pj = _mm_set1_ps(pg[j]);
                    const float *vj = vb + (size_t)j * (size_t)ldv + i;
                    a0 = _mm_add_ps(a0, _mm_mul_ps(pj, _mm_loadu_ps(vj)));
                    a1 = _mm_add_ps(a1, _mm_mul_ps(pj, _mm_loadu_ps(vj + 4)));
                }
                _mm_storeu_ps(og + i, a0);
                _mm_storeu_ps(og + i + 4, a1);
            }
            for (; i < h4; i += 4) {
                __m128 a0 = _mm_loadu_ps(og + i);
                for (int j = 0; j < nb; j++)
                    a0 = _mm_add_ps(a0, _mm_mul_ps(_mm_set1_ps(pg[j]), _mm_loadu_ps(vb + (size_t)j * (size_t)ldv + i)));
                _mm_storeu_ps(og + i, a0);
            }
            ml_canon_values_tail(og, pg, vb, (size_t)ldv, nb, i, hd);
        }
    }
}
