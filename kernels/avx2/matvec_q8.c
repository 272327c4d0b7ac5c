/* y = W x, Q8_0 weights, AVX2: a block's dot through vpmaddubsw as
 * |x| * (w * sign(x)) (avx2_dot.h), two blocks a step, in the 4-row body
 * kernels/x86/matvec_tmpl.h. Pair sums <= 2 * 127 * 127 < 2^15: vpmaddubsw
 * never saturates. */
#include "kernels/avx2/avx2_dot.h"
#include "kernels/x86/matvec256.h"

#define MV_WBYTES ML_Q8_BLOCK_BYTES

typedef ml_avx2_xq8 mv_x; /* a step: two blocks' x and |x| */
typedef ml_avx2_x mv_x1;
#define mv_xprep ml_avx2_xprep2_q8
#define mv_xprep1 ml_avx2_xprep_q8

/* pairs of |x| * (w * sign(x)) in int16, then groups of 4 in int32 */
ML_INLINE __m256i mv_dot1(const int8_t *w, const mv_x1 *xs) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(xs->a, ml_avx2_wsign(w, xs)), _mm256_set1_epi16(1));
}

ML_INLINE __m256i mv_dot(const int8_t *w, const mv_x *xs) {
    return mv256_pair(mv_dot1(w, &xs->b[0]), mv_dot1(w + MV_WBYTES, &xs->b[1]));
}

#include "kernels/x86/matvec_tmpl.h"

void ml_k_matvec_q8_avx2(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    mv_matvec(y, W, x, r0, r1);
}
