/* One 4-row matvec body for the sse2, sse41, avx2 and avxvnni builds (Q8_0
 * and Q4_0; avx512vnni has its own 16-row body, kernels/avx512vnni/
 * matvec16.h). The builds differ in the block dot (pmaddwd, pmaddubsw,
 * vpdpbusd) and the vector width; the 4-row loop, the reductions and the
 * float order are common, so they are written once here.
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
 * transpose. A group is 4 / MV_STEP steps of MV_STEP blocks (whatever fills
 * a vector: 1 at 128 bits, 2 at 256): a step's activations are prepared once
 * for the 4 rows, each row makes one dot, and the 4 dots reduce to one sum
 * per block and row. The last nb % 4 blocks go one at a time. The row tail
 * (< 4 rows) runs the same code with row 0 standing in for the missing rows,
 * whose lanes are ignored.
 *
 * The including kernels/<isa>/matvec_q*.c includes its width's primitives
 * (kernels/x86/matvec128.h or matvec256.h: mv_vi, MV_STEP, mv_block_sums,
 * mv_reduce4, mv_madd), defines its format's, then includes this file and
 * exports mv_matvec under its kernel name:
 *   MV_WBYTES                  weight bytes per block: 32 (Q8_0), 16 (Q4_0)
 *   mv_x, mv_xprep(xs, xq)     a step's activations, prepared once for the
 *                              4 rows from its MV_STEP blocks at xq
 *   mv_w, mv_wprep(wp, w)      a row's weights of a step (w: its first
 *                              block), prepared (loaded, unpacked) for its
 *                              dots; the matmul (kernels/x86/matmul_tmpl.h)
 *                              prepares them once for a tile of tokens
 *   mv_wdot(wp, xs) -> mv_vi   a row's dot of a step in mv_block_sums' layout
 *   MM_OWN_X                   (optional) the matmul prepares its steps'
 *                              activations its own way (mm_x, mm_xprep; the
 *                              operand of mv_wdot), and the matvec keeps
 *                              mv_x, mv_xprep and its own mv_dot(w, xs):
 *                              for a layout that pays only when the
 *                              weights' preparation is shared by tokens
 *   mv_x1, mv_xprep1, mv_dot1  the same for one block (its int32 lanes sum
 *                              to the block's sumi)                        */
#include <stddef.h>
#include <stdint.h>

#include <emmintrin.h>
#include <xmmintrin.h>

#include "config/ml_kernels.h"
#include "kernels/kernel_util.h"

/* Software prefetch, rows ahead: the same blocks of the row group after
 * next. The weights stream once per token from L3 or DRAM in 4 interleaved
 * row streams; the hardware prefetchers alone left 10-50% of the bandwidth
 * unused here (measured on 32000x288 .. 5632x2048). The scales of those
 * rows likewise, one line per 16 blocks: TinyLlama decode +5-20% (avx2).
 * A prefetch past the matrix end is harmless (prefetches do not fault). */
#define MV_PF_ROWS 8

/* The address is formed as an integer: past the end it is never a C pointer. */
ML_INLINE void mv_prefetch(const int8_t *p, size_t ahead) {
    _mm_prefetch((const char *)((uintptr_t)p + ahead), _MM_HINT_T0);
}

/* [d0[0] d1[0] d2[0] d3[0]] * dx: one block's scales for 4 rows */
ML_INLINE __m128 mv_scales1(const float *d, size_t nb, const float *xd) {
    return _mm_mul_ps(_mm_setr_ps(d[0], d[nb], d[2 * nb], d[3 * nb]), _mm_set1_ps(xd[0]));
}

/* w[j] = [block j: dw rows 0..3] for 4 blocks: one 4x4 transpose of the
 * rows' scale vectors (2 shuffles per block instead of 3 inserts). */
ML_INLINE void mv_wscales4(__m128 *w, const float *d, size_t nb) {
    __m128 r0 = _mm_loadu_ps(d), r1 = _mm_loadu_ps(d + nb), r2 = _mm_loadu_ps(d + 2 * nb), r3 = _mm_loadu_ps(d + 3 * nb);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    w[0] = r0, w[1] = r1, w[2] = r2, w[3] = r3;
}

/* s[j] = w[j] * dx[j] for n blocks: the canonical dw * dx, 4 rows at once */
ML_INLINE void mv_xscales(__m128 *s, const __m128 *w, const float *xd, int n) {
    ML_UNROLL for (int j = 0; j < n; j++) s[j] = _mm_mul_ps(w[j], _mm_set1_ps(xd[j]));
}

/* s[j] = [block j: dw rows 0..3] * dx[j] for 4 blocks */
ML_INLINE void mv_scales4(__m128 *s, const float *d, size_t nb, const float *xd) {
    __m128 w[4];
    mv_wscales4(w, d, nb);
    mv_xscales(s, w, xd, 4);
}

#ifndef MM_OWN_X
/* A row's dot of a step: its weights prepared, then multiplied. */
ML_INLINE mv_vi mv_dot(const int8_t *w, const mv_x *xs) {
    mv_w wp;
    mv_wprep(&wp, w);
    return mv_wdot(&wp, xs);
}
#endif

/* acc + one block of 4 rows (w, d: row 0's block and scale; rows ws bytes
 * and ds scales apart), lanes = rows: the tail of nb % 4 blocks */
ML_INLINE __m128 mv_block1(__m128 acc, const int8_t *w, size_t ws, const float *d, size_t ds, const int8_t *xq,
                           const float *xd) {
    mv_x1 x1;
    mv_xprep1(&x1, xq);
    mv_vi v1[4];
    ML_UNROLL for (int i = 0; i < 4; i++) v1[i] = mv_dot1(w + (size_t)i * ws, &x1);
    return _mm_add_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(mv_reduce4(v1)), mv_scales1(d, ds, xd)));
}

/* nr (4 or 1, a constant after inlining) consecutive rows starting at y. */
ML_INLINE void mv_rows(float *y, const int8_t *wq, size_t wstride, const float *wd, const int8_t *xq,
                       const float *xd, int nb, int nr) {
    /* rows past nr repeat row 0: their lanes are computed and ignored */
    const size_t ws = nr == 4 ? wstride : 0, ds = nr == 4 ? (size_t)nb : 0;
    const size_t pf = MV_PF_ROWS * wstride, pfd = MV_PF_ROWS * (size_t)nb * sizeof(float);
    __m128 acc = _mm_setzero_ps();
    int b = 0;
    for (; b + 4 <= nb; b += 4) { /* groups of 4 blocks */
        __m128 s[4];
        mv_scales4(s, wd + b, ds, xd + b);
        ML_UNROLL for (int i = 0; i < 4; i++) {
            ML_UNROLL for (int l = 0; l < 4 * MV_WBYTES; l += 64)
                mv_prefetch(wq + (size_t)i * ws + (size_t)b * MV_WBYTES + l, pf);
            if ((b & 15) == 0) mv_prefetch((const int8_t *)(wd + (size_t)i * ds + (size_t)b), pfd);
        }
        ML_UNROLL for (int k = 0; k < 4 / MV_STEP; k++) { /* steps of MV_STEP blocks */
            const int bk = b + k * MV_STEP;
            mv_x xs;
            mv_xprep(&xs, xq + (size_t)bk * ML_QK);
            mv_vi v[4];
            ML_UNROLL for (int i = 0; i < 4; i++) v[i] = mv_dot(wq + (size_t)i * ws + (size_t)bk * MV_WBYTES, &xs);
            acc = mv_madd(acc, mv_block_sums(v), s + k * MV_STEP);
        }
    }
    for (; b < nb; b++) { /* the last nb % 4 blocks, one at a time */
        ML_UNROLL for (int i = 0; i < 4; i++) mv_prefetch(wq + (size_t)i * ws + (size_t)b * MV_WBYTES, pf);
        acc = mv_block1(acc, wq + (size_t)b * MV_WBYTES, ws, wd + b, ds, xq + (size_t)b * ML_QK, xd + b);
    }
    if (nr == 4)
        _mm_storeu_ps(y, acc);
    else
        y[0] = _mm_cvtss_f32(acc);
}

ML_INLINE void mv_matvec(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1) {
    const int nb = W->cols / ML_QK;
    const size_t wstride = (size_t)nb * MV_WBYTES;
    int r = r0;
    for (; r + 4 <= r1; r += 4)
        mv_rows(y + r, W->q + (size_t)r * wstride, wstride, W->d + (size_t)r * (size_t)nb, x->q, x->d, nb, 4);
    for (; r < r1; r++)
        mv_rows(y + r, W->q + (size_t)r * wstride, wstride, W->d + (size_t)r * (size_t)nb, x->q, x->d, nb, 1);
}
