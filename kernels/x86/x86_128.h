/* The 128-bit step of the x86 4-row bodies (kernels/x86/matvec_body.h,
 * matmul_body.h), shared by the sse2 and sse41 builds: a step is one block,
 * a row's dot of it one int32x4 whose lanes sum to its sumi (sse2: 256 *
 * sumi). The including sse2_dot.h or sse41_dot.h first defines its block
 * dot (ml_x86_x, ml_x86_xprep, ml_x86_w, ml_x86_wprep, ml_x86_wdot) and
 * ml_x86_sumi (the reduced dots -> sumi); this file derives the rest of the
 * bodies' primitives from them. SSE2 instructions only. */
#ifndef ML_X86_128_H
#define ML_X86_128_H

#include <emmintrin.h>

#include "kernels/kernel_util.h"

typedef __m128i ml_x86_vi;

#define ML_X86_STEP 1

/* A step is one block: the tail's one-block primitives are the step's, and
 * the matmul's activations the matvec's. */
typedef ml_x86_x ml_x86_x1;
typedef ml_x86_x ml_x86_mx;

ML_INLINE void ml_x86_xprep1(ml_x86_x *xs, const int8_t *xq, ml_type t) { ml_x86_xprep(xs, xq, t); }
ML_INLINE void ml_x86_mxprep(ml_x86_x *xs, const int8_t *xq, ml_type t) { ml_x86_xprep(xs, xq, t); }

/* A row's dot of a step: its weights prepared, then multiplied. */
ML_INLINE __m128i ml_x86_dot(const int8_t *w, const ml_x86_x *xs, ml_type t) {
    ml_x86_w wp;
    ml_x86_wprep(&wp, w, t);
    return ml_x86_wdot(&wp, xs, t);
}

ML_INLINE __m128i ml_x86_dot1(const int8_t *w, const ml_x86_x *xs, ml_type t) { return ml_x86_dot(w, xs, t); }

/* [sumi row 0, .., row 3] from the rows' dots v[0..3]: transpose-and-add */
ML_INLINE __m128i ml_x86_block_sums(const __m128i *v) {
    const __m128i t01 = _mm_add_epi32(_mm_unpacklo_epi32(v[0], v[1]), _mm_unpackhi_epi32(v[0], v[1]));
    const __m128i t23 = _mm_add_epi32(_mm_unpacklo_epi32(v[2], v[3]), _mm_unpackhi_epi32(v[2], v[3]));
    return ml_x86_sumi(_mm_add_epi32(_mm_unpacklo_epi64(t01, t23), _mm_unpackhi_epi64(t01, t23)));
}

ML_INLINE __m128i ml_x86_reduce4(const __m128i *v) { return ml_x86_block_sums(v); }

/* acc + (float)sumi * s[0], lanes = rows: the canonical multiply, then add */
ML_INLINE __m128 ml_x86_madd(__m128 acc, __m128i sumi, const __m128 *s) {
    return _mm_add_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(sumi), s[0]));
}

/* 4 consecutive block scales as floats. fp16 without F16C, exactly: per
 * 32-bit lane, a normal half is its bits moved to fp32's places (<< 13)
 * with the exponent rebiased (+112 << 23); inf and NaN get fp32's all-ones
 * exponent (NaN made quiet, as F16C does); a subnormal half is m * 2^-24,
 * its 10-bit m converted and scaled by a power of two (both exact, and the
 * result is a normal float); then the sign. */
ML_INLINE __m128 ml_x86_ld4s(const void *d, ml_type st) {
    if (st == ML_TYPE_F32) return _mm_loadu_ps((const float *)d);
    const __m128i h = _mm_unpacklo_epi16(_mm_loadl_epi64((const __m128i *)d), _mm_setzero_si128());
    const __m128i em = _mm_and_si128(h, _mm_set1_epi32(0x7FFF));
    const __m128i sign = _mm_slli_epi32(_mm_xor_si128(h, em), 16);
    const __m128i infnan = _mm_and_si128(_mm_cmpgt_epi32(em, _mm_set1_epi32(0x7BFF)), _mm_set1_epi32(0x7F800000));
    const __m128i quiet = _mm_and_si128(_mm_cmpgt_epi32(em, _mm_set1_epi32(0x7C00)), _mm_set1_epi32(0x00400000));
    const __m128i normal = _mm_or_si128(_mm_add_epi32(_mm_slli_epi32(em, 13), _mm_set1_epi32(112 << 23)),
                                        _mm_or_si128(infnan, quiet));
    const __m128i sub = _mm_cmplt_epi32(em, _mm_set1_epi32(0x0400));
    const __m128i fsub = _mm_castps_si128(_mm_mul_ps(_mm_cvtepi32_ps(em), _mm_set1_ps(0x1p-24f)));
    const __m128i bits = _mm_or_si128(_mm_and_si128(sub, fsub), _mm_andnot_si128(sub, normal));
    return _mm_castsi128_ps(_mm_or_si128(bits, sign));
}

#endif
