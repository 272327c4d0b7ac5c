/* One matvec body for the 128- and 256-bit x86 builds. sse2, sse41, avx2 and
 * avxvnni differ only in the block dot (how 32 int8 products become int32
 * lanes: pmaddwd, pmaddubsw, vpdpbusd) and in the vector width; the 4-row
 * loop, the reduction and the scale accumulation are the same, so they are
 * written once here and instantiated by each kernels/<isa>/matvec_q*.c.
 *
 * Arithmetic (the scalar twin's, kernels/scalar/matvec.c): per row r and
 * block b, sumi = the exact int32 block dot; acc += (float)sumi * (dw * dx).
 * The lanes of one block's dot are summed in integers before the float scale,
 * so each term (float)sumi * (dw*dx) rounds as in the scalar twin. To keep
 * horizontal sums out of the block loop, G blocks (one per float lane: 4 or
 * 8) are reduced together by a transpose-and-add tree into one vector of G
 * block sums, converted, and multiply-added with the G scale products. Only
 * the order of the float accumulation differs (G interleaved partial sums,
 * combined once per row: DESIGN §7.1 tolerance).
 *
 * Each group of G activation blocks is prepared once (MV_XPREP, into a small
 * stack array that stays in L1) and used by 4 rows. A last group of fewer
 * than G blocks runs the same code with zero dots and zero scales in the
 * missing lanes; the row tail runs the same code one row at a time.
 *
 * The including .c defines, then includes this file once:
 *   MV_NAME            the kernel, e.g. ml_k_matvec_q8_avx2
 *   MV_WIDTH           128 or 256
 *   MV_WBYTES          weight bytes per block: 32 (Q8_0) or 16 (Q4_0)
 *   MV_XT              per-block activation state, shared by the 4 rows
 *   MV_XPREP(xs, xq)   fills MV_XT *xs from the block's 32 int8 activations
 *   MV_DOT(w, xs)      int32 vector (MV_VI) whose lanes sum to the block's
 *                      sumi (w: const int8_t *, the block's weight bytes)
 *   MV_HADD            optional: reduce with phaddd (SSSE3 and up)
 *   MV_POSTSCALE       optional: power of two multiplying each row sum     */
#include <stddef.h>

#include <immintrin.h>

#include "config/ml_kernels.h"
#include "kernels/x86/x86_common.h"

#if MV_WIDTH == 128
#define MV_G 4
#define MV_VF __m128
#define MV_VI __m128i
#define MV_VF_ZERO() _mm_setzero_ps()
#define MV_VI_ZERO() _mm_setzero_si128()
#define MV_VF_LOADU(p) _mm_loadu_ps(p)
#define MV_VF_CVT(v) _mm_cvtepi32_ps(v)
#define MV_VF_MUL(a, b) _mm_mul_ps(a, b)
#define MV_VF_MADD(a, b, c) _mm_add_ps(c, _mm_mul_ps(a, b)) /* no FMA before avx2 */
#define MV_VF_TO128(v) (v)

/* [sum v[0], sum v[1], sum v[2], sum v[3]] */
ML_INLINE __m128i mv_reduce(const __m128i *v) {
#ifdef MV_HADD
    return _mm_hadd_epi32(_mm_hadd_epi32(v[0], v[1]), _mm_hadd_epi32(v[2], v[3]));
#else
    const __m128i t01 = _mm_add_epi32(_mm_unpacklo_epi32(v[0], v[1]), _mm_unpackhi_epi32(v[0], v[1]));
    const __m128i t23 = _mm_add_epi32(_mm_unpacklo_epi32(v[2], v[3]), _mm_unpackhi_epi32(v[2], v[3]));
    return _mm_add_epi32(_mm_unpacklo_epi64(t01, t23), _mm_unpackhi_epi64(t01, t23));
#endif
}

#elif MV_WIDTH == 256
#define MV_G 8
#define MV_VF __m256
#define MV_VI __m256i
#define MV_VF_ZERO() _mm256_setzero_ps()
#define MV_VI_ZERO() _mm256_setzero_si256()
#define MV_VF_LOADU(p) _mm256_loadu_ps(p)
#define MV_VF_CVT(v) _mm256_cvtepi32_ps(v)
#define MV_VF_MUL(a, b) _mm256_mul_ps(a, b)
#define MV_VF_MADD(a, b, c) _mm256_fmadd_ps(a, b, c)
#define MV_VF_TO128(v) _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1))

/* [sum v[0], ..., sum v[7]]: reduce within 128-bit halves, then add halves */
ML_INLINE __m256i mv_reduce(const __m256i *v) {
#ifdef MV_HADD
    const __m256i u0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i u1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
#else
    __m256i t[4];
    ML_UNROLL for (int k = 0; k < 4; k++)
        t[k] = _mm256_add_epi32(_mm256_unpacklo_epi32(v[2 * k], v[2 * k + 1]),
                                _mm256_unpackhi_epi32(v[2 * k], v[2 * k + 1]));
    const __m256i u0 = _mm256_add_epi32(_mm256_unpacklo_epi64(t[0], t[1]), _mm256_unpackhi_epi64(t[0], t[1]));
    const __m256i u1 = _mm256_add_epi32(_mm256_unpacklo_epi64(t[2], t[3]), _mm256_unpackhi_epi64(t[2], t[3]));
#endif
    /* u0 = [v0..v3 low halves | v0..v3 high halves], u1 likewise for v4..v7 */
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

#else
#error "MV_WIDTH must be 128 or 256"
#endif

#ifndef MV_POSTSCALE
#define MV_POSTSCALE 1.0f
#endif

/* [sum(a0), sum(a1), sum(a2), sum(a3)] */
ML_INLINE __m128 mv_hsum4(__m128 a0, __m128 a1, __m128 a2, __m128 a3) {
    const __m128 t0 = _mm_add_ps(_mm_unpacklo_ps(a0, a1), _mm_unpackhi_ps(a0, a1));
    const __m128 t1 = _mm_add_ps(_mm_unpacklo_ps(a2, a3), _mm_unpackhi_ps(a2, a3));
    return _mm_add_ps(_mm_movelh_ps(t0, t1), _mm_movehl_ps(t1, t0));
}

/* nr (4 or 1, a constant after inlining) consecutive rows starting at y. */
ML_INLINE void mv_rows(float *y, const int8_t *wq, size_t wstride, const float *wd, const int8_t *xq,
                       const float *xd, int nb, int nr) {
    MV_VF acc[4] = {MV_VF_ZERO(), MV_VF_ZERO(), MV_VF_ZERO(), MV_VF_ZERO()};
    MV_XT xs[MV_G];
    MV_VI v[MV_G];
    int b = 0;
    for (; b + MV_G <= nb; b += MV_G) {
        ML_UNROLL for (int j = 0; j < MV_G; j++) MV_XPREP(&xs[j], xq + (size_t)(b + j) * ML_QK);
        const MV_VF dx = MV_VF_LOADU(xd + b);
        ML_UNROLL for (int i = 0; i < nr; i++) {
            const int8_t *w = wq + (size_t)i * wstride + (size_t)b * MV_WBYTES;
            ML_UNROLL for (int j = 0; j < MV_G; j++) v[j] = MV_DOT(w + j * MV_WBYTES, &xs[j]);
            const MV_VF s = MV_VF_MUL(MV_VF_LOADU(wd + (size_t)i * (size_t)nb + (size_t)b), dx);
            acc[i] = MV_VF_MADD(MV_VF_CVT(mv_reduce(v)), s, acc[i]);
        }
    }
    if (b < nb) { /* the last nb % G blocks: missing lanes get 0 dots, 0 scales */
        const int t = nb - b;
        float sx[MV_G] = {0}, sw[MV_G] = {0};
        for (int j = 0; j < t; j++) {
            MV_XPREP(&xs[j], xq + (size_t)(b + j) * ML_QK);
            sx[j] = xd[b + j];
        }
        for (int j = t; j < MV_G; j++) v[j] = MV_VI_ZERO();
        const MV_VF dx = MV_VF_LOADU(sx);
        ML_UNROLL for (int i = 0; i < nr; i++) {
            const int8_t *w = wq + (size_t)i * wstride + (size_t)b * MV_WBYTES;
            for (int j = 0; j < t; j++) {
                v[j] = MV_DOT(w + j * MV_WBYTES, &xs[j]);
                sw[j] = wd[(size_t)i * (size_t)nb + (size_t)(b + j)];
            }
            acc[i] = MV_VF_MADD(MV_VF_CVT(mv_reduce(v)), MV_VF_MUL(MV_VF_LOADU(sw), dx), acc[i]);
        }
    }
    if (nr == 4) {
        const __m128 s = mv_hsum4(MV_VF_TO128(acc[0]), MV_VF_TO128(acc[1]), MV_VF_TO128(acc[2]), MV_VF_TO128(acc[3]));
        _mm_storeu_ps(y, _mm_mul_ps(s, _mm_set1_ps(MV_POSTSCALE)));
    } else {
        __m128 s = MV_VF_TO128(acc[0]);
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        y[0] = _mm_cvtss_f32(s) * MV_POSTSCALE;
    }
}

void MV_NAME(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    const int nb = W->cols / ML_QK;
    const size_t wstride = (size_t)nb * MV_WBYTES;
    int r = r0;
    for (; r + 4 <= r1; r += 4)
        mv_rows(y + r, W->q + (size_t)r * wstride, wstride, W->d + (size_t)r * (size_t)nb, x->q, x->d, nb, 4);
    for (; r < r1; r++)
        mv_rows(y + r, W->q + (size_t)r * wstride, wstride, W->d + (size_t)r * (size_t)nb, x->q, x->d, nb, 1);
}
