/* One 4-row matvec body for the sse2, sse41, avx2 and avxvnni builds (Q8_0
 * and Q4_0; avx512vnni has its own 16-row body, kernels/avx512vnni/
 * matvec_body.h), over fixed-name primitives: the including .c first
 * includes its build's helper header (kernels/sse2/sse2_dot.h,
 * kernels/sse41/sse41_dot.h, kernels/avx2/avx2_dot.h, which also serves
 * avxvnni), which defines, t being the weight type (ML_TYPE_Q8_0 or
 * ML_TYPE_Q4_0, a constant after inlining):
 *   ML_X86_STEP                 blocks per step: 1 at 128 bits, 2 at 256
 *   ml_x86_vi                   the 4 rows' dot of a step (int32 lanes)
 *   ml_x86_x, ml_x86_xprep(xs, xq, t)
 *                               a step's activations, prepared once for
 *                               the 4 rows from its blocks at xq
 *   ml_x86_dot(w, xs, t)        a row's dot of a step (w: its first block)
 *   ml_x86_x1, ml_x86_xprep1, ml_x86_dot1
 *                               the same for one block (the nb % 4 tail)
 *   ml_x86_block_sums(v)        the 4 rows' step dots -> each block's
 *                               [sumi row 0..3], in a ml_x86_vi
 *   ml_x86_reduce4(v)           the 4 rows' one-block dots -> [sumi row
 *                               0..3] (__m128i)
 *   ml_x86_madd(acc, sums, s)   acc + (float)sumi * s[j], block j of the
 *                               step after block j - 1 (lanes = rows)
 *   ml_x86_ld4s(d, st)          4 consecutive block scales of one row as
 *                               floats, st their type (ML_TYPE_F32, or
 *                               ML_TYPE_F16: converted exactly, F16C on
 *                               avx2 and avxvnni, integer code on sse2 and
 *                               sse41; a constant after inlining)
 * and, for the matmul body (kernels/x86/matmul_body.h): ml_x86_mx,
 * ml_x86_mxprep (a step's activations as the matmul wants them), ml_x86_w,
 * ml_x86_wprep (a row's step of weights, prepared once for a tile of
 * tokens), ml_x86_wdot(wp, xs, t) (its dot, in ml_x86_block_sums' layout).
 *
 * Float order (kernels/canon.h rule 5, bit-identical to the scalar twin):
 * each row accumulates sequentially over its blocks,
 *     sum += (float)sumi * (dw * dx),   sumi the exact int32 block dot,
 * with separate multiplies and adds. So the vector lanes hold rows, not
 * elements: the 4 row dots of a block (their int32 lanes) are reduced across
 * the rows by a transpose-and-add tree to [sumi row0 .. row3], converted,
 * multiplied by [dw row0 .. row3] * dx, and added to a 4-lane accumulator
 * whose lanes are the 4 rows; after the last block the lanes are y[r..r+3].
 * No horizontal sum is left for the end.
 *
 * Blocks go in groups of 4, whose scales for the 4 rows come from one 4x4
 * transpose. A group is 4 / ML_X86_STEP steps: a step's activations are
 * prepared once for the 4 rows, each row makes one dot, and the 4 dots
 * reduce to one sum per block and row. The last nb % 4 blocks go one at a
 * time. The row tail (< 4 rows) runs the same code with row 0 standing in
 * for the missing rows, whose lanes are ignored. */
#ifndef ML_X86_MATVEC_BODY_H
#define ML_X86_MATVEC_BODY_H

#include <stddef.h>
#include <stdint.h>

#include <emmintrin.h>
#include <xmmintrin.h>

#include "config/ml_kernels.h"
#include "kernels/kernel_util.h"

/* Bytes of one weight block of type t. */
ML_INLINE size_t ml_x86_wbytes(ml_type t) { return t == ML_TYPE_Q4_0 ? ML_Q4_BLOCK_BYTES : ML_Q8_BLOCK_BYTES; }

/* Software prefetch, rows ahead: the same blocks of the row group after
 * next. The weights stream once per token from L3 or DRAM in 4 interleaved
 * row streams; the hardware prefetchers alone left 10-50% of the bandwidth
 * unused here (measured on 32000x288 .. 5632x2048). The scales of those
 * rows likewise, one line per 16 blocks: TinyLlama decode +5-20% (avx2).
 * A prefetch past the matrix end is harmless (prefetches do not fault). */
#define ML_X86_PF_ROWS 8

/* A prefetch into L1 holds one of L1's few miss buffers until its line
 * arrives: from DRAM, Zen 4 streamed Q8_0 weights at 9-10 of its 26 GB/s.
 * So Q8_0 also prefetches twice as far ahead into L2, whose misses are
 * many more, and the prefetch into L1 then finds the line in L2. Zen 4, 1
 * thread, stories110M Q8_0 decode: sse2 1.6-1.9x, sse41 1.9-2.4x, avx2
 * 2.3-2.8x; L3-sized stories15M medians 1.02-1.20x (into L2 alone, avx2
 * 0.71-0.90x). Q4_0, half the bytes, lost with it where its weights fit
 * in L3 (stories15M avx2 0.65-0.88x) and is left as it was. t: the weight
 * type. The address is formed as an integer: past the end it is never a C
 * pointer. */
ML_INLINE void ml_x86_prefetch(const int8_t *p, size_t ahead, ml_type t) {
    _mm_prefetch((const char *)((uintptr_t)p + ahead), _MM_HINT_T0);
    if (t == ML_TYPE_Q8_0) _mm_prefetch((const char *)((uintptr_t)p + 2 * ahead), _MM_HINT_T1);
}

/* Scale i of the array d of scales of type st (the weight scales are void
 * pointers: fp32 or fp16 by the kernel's st, a constant after inlining). */
ML_INLINE const void *ml_x86_sptr(const void *d, size_t i, ml_type st) {
    return (const char *)d + i * (size_t)ml_scale_bytes(st);
}

/* Prefetch 4 rows' blocks b .. b + 3 pf bytes ahead (rows ws bytes and
 * ds scales apart), and their scales pfd bytes ahead once per 16 blocks. */
ML_INLINE void ml_x86_prefetch_rows(const int8_t *wq, size_t ws, const void *wd, size_t ds, int b, size_t pf,
                                    size_t pfd, ml_type t, ml_type st) {
    const size_t wb = ml_x86_wbytes(t);
    ML_UNROLL for (int i = 0; i < 4; i++) {
        ML_UNROLL for (size_t l = 0; l < 4 * wb; l += 64)
            ml_x86_prefetch(wq + (size_t)i * ws + (size_t)b * wb + l, pf, t);
        if ((b & 15) == 0)
            ml_x86_prefetch((const int8_t *)ml_x86_sptr(wd, (size_t)i * ds + (size_t)b, st), pfd, t);
    }
}

/* [d0[0] d1[0] d2[0] d3[0]] * dx: one block's scales for 4 rows (the
 * tail's: fp16 by the scalar conversion, the same bits) */
ML_INLINE __m128 ml_x86_scales1(const void *d, size_t nb, const float *xd, ml_type st) {
    return _mm_mul_ps(_mm_setr_ps(ml_scale_at(d, 0, st), ml_scale_at(d, nb, st), ml_scale_at(d, 2 * nb, st),
                                  ml_scale_at(d, 3 * nb, st)),
                      _mm_set1_ps(xd[0]));
}

/* w[j] = [block j: dw rows 0..3] for 4 blocks: one 4x4 transpose of the
 * rows' scale vectors (2 shuffles per block instead of 3 inserts). */
ML_INLINE void ml_x86_wscales4(__m128 *w, const void *d, size_t nb, ml_type st) {
    __m128 r0 = ml_x86_ld4s(d, st), r1 = ml_x86_ld4s(ml_x86_sptr(d, nb, st), st);
    __m128 r2 = ml_x86_ld4s(ml_x86_sptr(d, 2 * nb, st), st), r3 = ml_x86_ld4s(ml_x86_sptr(d, 3 * nb, st), st);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    w[0] = r0, w[1] = r1, w[2] = r2, w[3] = r3;
}

/* s[j] = w[j] * dx[j] for n blocks: the canonical dw * dx, 4 rows at once */
ML_INLINE void ml_x86_xscales(__m128 *s, const __m128 *w, const float *xd, int n) {
    ML_UNROLL for (int j = 0; j < n; j++) s[j] = _mm_mul_ps(w[j], _mm_set1_ps(xd[j]));
}

/* acc + one block of 4 rows (w, d: row 0's block and scale; rows ws bytes
 * and ds scales apart), lanes = rows: the tail of nb % 4 blocks */
ML_INLINE __m128 ml_x86_block1(__m128 acc, const int8_t *w, size_t ws, const void *d, size_t ds, const int8_t *xq,
                               const float *xd, ml_type t, ml_type st) {
    ml_x86_x1 x1;
    ml_x86_xprep1(&x1, xq, t);
    ml_x86_vi v1[4];
    ML_UNROLL for (int i = 0; i < 4; i++) v1[i] = ml_x86_dot1(w + (size_t)i * ws, &x1, t);
    return _mm_add_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(ml_x86_reduce4(v1)), ml_x86_scales1(d, ds, xd, st)));
}

/* nr (4 or 1, a constant after inlining) consecutive rows starting at y. */
ML_INLINE void ml_x86_rows(float *y, const int8_t *wq, size_t wstride, const void *wd, const int8_t *xq,
                           const float *xd, int nb, int nr, ml_type t, ml_type st) {
    /* rows past nr repeat row 0: their lanes are computed and ignored */
    const size_t ws = nr == 4 ? wstride : 0, ds = nr == 4 ? (size_t)nb : 0, wb = ml_x86_wbytes(t);
    const size_t pf = ML_X86_PF_ROWS * wstride, pfd = ML_X86_PF_ROWS * (size_t)nb * (size_t)ml_scale_bytes(st);
    __m128 acc = _mm_setzero_ps();
    int b = 0;
    for (; b + 4 <= nb; b += 4) { /* groups of 4 blocks */
        __m128 w[4], s[4];
        ml_x86_wscales4(w, ml_x86_sptr(wd, (size_t)b, st), ds, st);
        ml_x86_xscales(s, w, xd + b, 4);
        ml_x86_prefetch_rows(wq, ws, wd, ds, b, pf, pfd, t, st);
        ML_UNROLL for (int k = 0; k < 4 / ML_X86_STEP; k++) { /* steps of ML_X86_STEP blocks */
            const int bk = b + k * ML_X86_STEP;
            ml_x86_x xs;
            ml_x86_xprep(&xs, xq + (size_t)bk * ML_QK, t);
            ml_x86_vi v[4];
            ML_UNROLL for (int i = 0; i < 4; i++) v[i] = ml_x86_dot(wq + (size_t)i * ws + (size_t)bk * wb, &xs, t);
            acc = ml_x86_madd(acc, ml_x86_block_sums(v), s + k * ML_X86_STEP);
        }
    }
    for (; b < nb; b++) { /* the last nb % 4 blocks, one at a time */
        ML_UNROLL for (int i = 0; i < 4; i++)
            ml_x86_prefetch(wq + (size_t)i * ws + (size_t)b * wb, pf, t);
        acc = ml_x86_block1(acc, wq + (size_t)b * wb, ws, ml_x86_sptr(wd, (size_t)b, st), ds, xq + (size_t)b * ML_QK,
                            xd + b, t, st);
    }
    if (nr == 4)
        _mm_storeu_ps(y, acc);
    else
        y[0] = _mm_cvtss_f32(acc);
}

/* y[r0..r1) = W x for weights of type t with scales of type st */
ML_INLINE void ml_x86_matvec(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1, ml_type t, ml_type st) {
    const int nb = W->cols / ML_QK;
    const size_t wstride = (size_t)nb * ml_x86_wbytes(t);
    int r = r0;
    for (; r + 4 <= r1; r += 4)
        ml_x86_rows(y + r, W->q + (size_t)r * wstride, wstride, ml_x86_sptr(W->d, (size_t)r * (size_t)nb, st), x->q,
                    x->d, nb, 4, t, st);
    for (; r < r1; r++)
        ml_x86_rows(y + r, W->q + (size_t)r * wstride, wstride, ml_x86_sptr(W->d, (size_t)r * (size_t)nb, st), x->q,
                    x->d, nb, 1, t, st);
}

#endif
