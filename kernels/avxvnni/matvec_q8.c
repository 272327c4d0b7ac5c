/* y = W x, Q8_0 weights, AVX-VNNI: avx2's kernel (kernels/avx2/matvec_q8.c)
 * with vpdpbusd(0, |x|, w * sign(x)) as the block dot: it multiplies
 * unsigned by signed bytes and adds groups of 4 into int32 lanes in one
 * instruction, replacing vpmaddubsw + vpmaddwd (and the int16 step). */
#include "kernels/avx2/avx2_dot.h"
#include "kernels/x86/matvec256.h"

#define MV_WBYTES ML_Q8_BLOCK_BYTES

typedef ml_avx2_xq8 mv_x; /* a step: two blocks' x and |x| */
typedef ml_avx2_x mv_x1;
#define mv_xprep ml_avx2_xprep2_q8
#define mv_xprep1 ml_avx2_xprep_q8

/* |x| * (w * sign(x)) in groups of 4, straight into int32 */
ML_INLINE __m256i mv_dot1(const int8_t *w, const mv_x1 *xs) {
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), xs->a, ml_avx2_wsign(w, xs));
}

ML_INLINE __m256i mv_dot(const int8_t *w, const mv_x *xs) {
    return mv256_pair(mv_dot1(w, &xs->b[0]), mv_dot1(w + MV_WBYTES, &xs->b[1]));
}

#include "kernels/x86/matvec_tmpl.h"

void ml_k_matvec_q8_avxvnni(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    mv_matvec(y, W, x, r0, r1);
}
