/* Attention values, AVX-512: the shared body's values (kernels/attn_body.h)
 * over 16-lane vectors, half the instructions of avx2's per key (2.1-2.4x
 * avx2's speed in `ml_bench --kernels-only`, head size 64, 4 heads). An
 * output element adds p_t * v_t key by key in any lane, so it is
 * bit-identical to the scalar twin (kernels/canon.h rule 6). A head size
 * that is not a multiple of 16 goes to avx2's 8-lane chunks. The scores
 * stay avx2's: a rule-2 score is one 8-lane set per key, and two query
 * heads per 16-lane vector measured no faster (the fold and the division
 * per tile weigh as much as the multiply-adds). */
#include <immintrin.h>

#include "config/ml_kernels.h"
#include "kernels/kernel_util.h"

typedef __m512 ml_vf;

ML_INLINE __m512 ml_vf_load(const float *p) { return _mm512_loadu_ps(p); }
ML_INLINE void ml_vf_store(float *p, __m512 v) { _mm512_storeu_ps(p, v); }
ML_INLINE __m512 ml_vf_set1(float c) { return _mm512_set1_ps(c); }
ML_INLINE __m512 ml_vf_madd(__m512 acc, __m512 a, __m512 b) { return _mm512_add_ps(acc, _mm512_mul_ps(a, b)); }

#define ML_ATTN_VALUES_ONLY
#include "kernels/attn_body.h"

void ml_k_attn_values_avx512vnni(float *o, int ldo, const float *p, int ldp, int G, const float *v, int ldv, int n,
                                 int hd) {
    if (hd % 16) {
        ml_k_attn_values_avx2(o, ldo, p, ldp, G, v, ldv, n, hd);
        return;
    }
    ml_attn_values(o, ldo, p, ldp, G, v, ldv, n, hd);
}
