/* The SVE matvec body, Q8_0 and Q4_0, vector-length agnostic: the same code
 * runs at every vector length from 128 to 2048 bits (and the odd multiples
 * of 128 in between); svcntw() is read, never switched on.
 *
 * Float order (kernels/canon.h rule 5, bit-identical to the scalar twin):
 * each row accumulates sequentially over its blocks,
 *     sum += (float)sumi * (dw * dx),   sumi the exact int32 block dot,
 * with separate multiplies and adds. So each 32-bit lane holds one row, for
 * the whole computation: a tile is svcntw() consecutive rows, and its block
 * sums come out one per lane with no reduction across lanes:
 *   - the 4-byte words of a weight block are gathered across the tile's rows
 *     (word k of every row's block b: one ld1w gather, lane i = row i);
 *   - each block half of the activations is replicated into every 128-bit
 *     segment (ld1rq), so the indexed sdot adds lane i's word k times the
 *     activations' word k: after the block's 8 words (Q8_0), lane i holds
 *     row i's exact sumi;
 *   - the row scales are gathered the same way, and the float update is one
 *     vector multiply and add for the whole tile, in block order.
 * A gather moves as many bytes as a contiguous load (one vector), so the
 * instruction count per weight byte falls with the vector length like a
 * contiguous kernel's, without its horizontal reductions.
 *
 * Rows go in groups of ML_SVE_TILES tiles, which share the activation loads;
 * the last rows go one tile at a time, the lanes past r1 switched off by the
 * predicate (inactive lanes load nothing, so no read past the matrix). Every
 * row's result is the same whichever tile or lane computes it.           */
#ifndef ML_SVE_MATVEC_H
#define ML_SVE_MATVEC_H

#include <arm_sve.h>
#include <stddef.h>
#include <stdint.h>

#include "config/ml_kernels.h"
#include "kernels/kernel_util.h"

#define ML_SVE_TILES 4 /* tiles per row group: s0..s3 in ml_sve_rows */

/* Word k (bytes 4k..4k+3) of each active row's block, as int8 lanes.
 * w: row 0's block; off: lane i's byte offset, i * (row stride). */
ML_INLINE svint8_t ml_sve_word(svbool_t pg, const int8_t *w, svuint32_t off, uint32_t k) {
    const svuint32_t o = svadd_n_u32_x(svptrue_b32(), off, 4 * k);
    return svreinterpret_s8_s32(svld1_gather_u32offset_s32(pg, (const int32_t *)(const void *)w, o));
}

/* Q8_0: the 8 words of a block, 0..3 against the activations' first half,
 * 4..7 against the second; lane i = row i's exact sumi. */
ML_INLINE svint32_t ml_sve_dot_q8(svbool_t pg, const int8_t *w, svuint32_t off, svint8_t xlo, svint8_t xhi,
                                  svint32_t init) {
    svint32_t acc = init;
    acc = svdot_lane_s32(acc, ml_sve_word(pg, w, off, 0), xlo, 0);
    acc = svdot_lane_s32(acc, ml_sve_word(pg, w, off, 1), xlo, 1);
    acc = svdot_lane_s32(acc, ml_sve_word(pg, w, off, 2), xlo, 2);
    acc = svdot_lane_s32(acc, ml_sve_word(pg, w, off, 3), xlo, 3);
    acc = svdot_lane_s32(acc, ml_sve_word(pg, w, off, 4), xhi, 0);
    acc = svdot_lane_s32(acc, ml_sve_word(pg, w, off, 5), xhi, 1);
    acc = svdot_lane_s32(acc, ml_sve_word(pg, w, off, 6), xhi, 2);
    acc = svdot_lane_s32(acc, ml_sve_word(pg, w, off, 7), xhi, 3);
    return acc;
}

/* Q4_0: byte j holds element j (low nibble) and 16 + j (high nibble), so
 * word k's low nibbles pair with the activations' first-half word k and its
 * high nibbles with the second-half word k. The nibbles stay unsigned
 * (0..15, exact as int8); the "- 8" comes in through init (ml_sve_q4_corr).
 * mask is 0x0F in every byte, passed in a register: AND with an immediate
 * overwrites its input, which gcc pays for with a movprfx copy per word. */
ML_INLINE svint8_t ml_sve_lo(svuint8_t v, svuint8_t mask) {
    return svreinterpret_s8_u8(svand_u8_x(svptrue_b8(), v, mask));
}

ML_INLINE svint8_t ml_sve_hi(svuint8_t v) {
    return svreinterpret_s8_u8(svlsr_n_u8_x(svptrue_b8(), v, 4));
}

ML_INLINE svint32_t ml_sve_dot_q4(svbool_t pg, const int8_t *w, svuint32_t off, svint8_t xlo, svint8_t xhi,
                                  svint32_t init, svuint8_t mask) {
    const svuint8_t v0 = svreinterpret_u8_s8(ml_sve_word(pg, w, off, 0));
    const svuint8_t v1 = svreinterpret_u8_s8(ml_sve_word(pg, w, off, 1));
    const svuint8_t v2 = svreinterpret_u8_s8(ml_sve_word(pg, w, off, 2));
    const svuint8_t v3 = svreinterpret_u8_s8(ml_sve_word(pg, w, off, 3));
    svint32_t acc = init;
    acc = svdot_lane_s32(svdot_lane_s32(acc, ml_sve_lo(v0, mask), xlo, 0), ml_sve_hi(v0), xhi, 0);
    acc = svdot_lane_s32(svdot_lane_s32(acc, ml_sve_lo(v1, mask), xlo, 1), ml_sve_hi(v1), xhi, 1);
    acc = svdot_lane_s32(svdot_lane_s32(acc, ml_sve_lo(v2, mask), xlo, 2), ml_sve_hi(v2), xhi, 2);
    acc = svdot_lane_s32(svdot_lane_s32(acc, ml_sve_lo(v3, mask), xlo, 3), ml_sve_hi(v3), xhi, 3);
    return acc;
}

/* -8 * (sum of the block's 32 activations), in every lane: the Q4_0 offset,
 * once per block for all rows. A plain sdot against -8 leaves the sum spread
 * over the 4 lanes of each segment; one reduction of the first segment. */
ML_INLINE svint32_t ml_sve_q4_corr(svint8_t xlo, svint8_t xhi) {
    const svint8_t m8 = svdup_n_s8(-ML_Q4_OFFSET);
    const svint32_t c = svdot_s32(svdot_s32(svdup_n_s32(0), xlo, m8), xhi, m8);
    return svdup_n_s32((int32_t)svaddv_s32(svptrue_pat_b32(SV_VL4), c));
}

/* The tile's block scales of type st (ML_TYPE_F32, or ML_TYPE_F16: each
 * half zero-extended into its 32-bit lane, then fcvt, which converts the
 * bottom half of each lane exactly; SVE is IEEE), lane i's at d + doff[i]. */
ML_INLINE svfloat32_t ml_sve_ld_scales(svbool_t pg, const char *d, svuint32_t doff, ml_type st) {
    if (st == ML_TYPE_F16)
        return svcvt_f32_f16_x(pg, svreinterpret_f16_u32(svld1uh_gather_u32offset_u32(pg, (const uint16_t *)(const void *)d, doff)));
    return svld1_gather_u32offset_f32(pg, (const float *)(const void *)d, doff);
}

/* One tile's step for one block: the exact block sums, then the float
 * update sum += (float)sumi * (dw * dx) lane by lane. Per call: off, the
 * lanes' byte offsets into the weights; doff, into the scales (one per tile,
 * so all tiles share the pointer d); mask for Q4. Per block: the activations
 * xlo, xhi, init (0, or the Q4 offset term) and dx. */
ML_INLINE svfloat32_t ml_sve_step(svfloat32_t sum, svbool_t pg, const int8_t *w, const char *d, svuint32_t doff,
                                  svuint32_t off, svuint8_t mask, svint8_t xlo, svint8_t xhi, svint32_t init,
                                  svfloat32_t dx, int q4, ml_type st) {
    const svint32_t sumi =
        q4 ? ml_sve_dot_q4(pg, w, off, xlo, xhi, init, mask) : ml_sve_dot_q8(pg, w, off, xlo, xhi, init);
    const svfloat32_t s = svmul_f32_x(pg, ml_sve_ld_scales(pg, d, doff, st), dx);
    return svadd_f32_x(pg, sum, svmul_f32_x(pg, svcvt_f32_s32_x(pg, sumi), s));
}

/* 0x0F in every byte, read at run time: a constant would be folded back
 * into the immediate AND (see ml_sve_dot_q4). */
static volatile const uint8_t ml_sve_nibble_mask = 0x0F;

/* nt tiles (ML_SVE_TILES or 1, a constant after inlining) of rows from r:
 * pg0 is the first tile's predicate; a group's other tiles are full. */
ML_INLINE void ml_sve_rows(float *y, const ml_qtensor *W, const ml_qact *x, int r, svbool_t pg0, int nt, int q4,
                           ml_type st) {
    const int nb = W->cols / ML_QK;
    const size_t wbytes = q4 ? ML_Q4_BLOCK_BYTES : ML_Q8_BLOCK_BYTES, wstride = (size_t)nb * wbytes;
    const size_t rt = svcntw(); /* rows per tile */
    /* lane i: row i of the tile, in bytes from row 0 (fits: at most 63 rows
     * of at most 2^18 bytes) */
    const svuint32_t off = svindex_u32(0, (uint32_t)wstride);
    const size_t sb = (size_t)ml_scale_bytes(st);
    const uint32_t dstride = (uint32_t)((size_t)nb * sb), dtile = (uint32_t)rt * dstride;
    const svuint32_t doff0 = svindex_u32(0, dstride), doff1 = svindex_u32(dtile, dstride);
    const svuint32_t doff2 = svindex_u32(2 * dtile, dstride), doff3 = svindex_u32(3 * dtile, dstride);
    const svuint8_t mask = svdup_n_u8(q4 ? ml_sve_nibble_mask : 0);
    const svbool_t all = svptrue_b32();
    const int8_t *w = W->q + (size_t)r * wstride, *xq = x->q;
    const char *d = (const char *)W->d + (size_t)r * (size_t)nb * sb;
    const float *xd = x->d;
    svfloat32_t s0 = svdup_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
    for (int b = 0; b < nb; b++, w += wbytes, d += sb, xq += ML_QK, xd++) {
        const svint8_t xlo = svld1rq_s8(svptrue_b8(), xq), xhi = svld1rq_s8(svptrue_b8(), xq + 16);
        const svint32_t init = q4 ? ml_sve_q4_corr(xlo, xhi) : svdup_n_s32(0);
        const svfloat32_t dx = svdup_n_f32(*xd);
        s0 = ml_sve_step(s0, pg0, w, d, doff0, off, mask, xlo, xhi, init, dx, q4, st);
        if (nt > 1) {
            s1 = ml_sve_step(s1, all, w + rt * wstride, d, doff1, off, mask, xlo, xhi, init, dx, q4, st);
            s2 = ml_sve_step(s2, all, w + 2 * rt * wstride, d, doff2, off, mask, xlo, xhi, init, dx, q4, st);
            s3 = ml_sve_step(s3, all, w + 3 * rt * wstride, d, doff3, off, mask, xlo, xhi, init, dx, q4, st);
        }
    }
    svst1_f32(pg0, y + r, s0);
    if (nt > 1) {
        svst1_f32(all, y + r + rt, s1);
        svst1_f32(all, y + r + 2 * rt, s2);
        svst1_f32(all, y + r + 3 * rt, s3);
    }
}

ML_INLINE void ml_sve_matvec(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1, int q4, ml_type st) {
    const int rt = (int)svcntw();
    int r = r0;
    for (; r + ML_SVE_TILES * rt <= r1; r += ML_SVE_TILES * rt)
        ml_sve_rows(y, W, x, r, svptrue_b32(), ML_SVE_TILES, q4, st);
    for (; r < r1; r += rt) ml_sve_rows(y, W, x, r, svwhilelt_b32(r, r1), 1, q4, st);
}

#endif
