/* The SVE matmul body, Q8_0 and Q4_0, vector-length agnostic like the
 * matvec (sve_matvec.h, whose gathers it uses): Y[t*ldy + r] = W[r,:] . X[t].
 *
 * A tile is one row tile (svcntw() consecutive rows, one a lane) x up to
 * ML_SVE_MM_TOKENS tokens. Each block's 8 weight words are gathered across
 * the tile's rows once (Q4_0: 4 words, unpacked once to the nibbles' values
 * in [-8, 7], so no offset term per token) and meet every token of the tile:
 * per token, its two activation halves replicated into each 128-bit segment
 * (ld1rq) and 8 indexed sdot leave each row's exact sumi in its lane. The
 * tile's sums stay in registers over all blocks.
 *
 * Float order (kernels/canon.h rule 5): each (row, token) lane starts at
 * 0.0f and takes sum += (float)sumi * (dw * dx) block by block, multiply
 * then add, exactly as the matvec: every output is the matvec's bit for bit.
 * The last tile of rows has the lanes past r1 switched off (inactive lanes
 * load and store nothing). */
#ifndef ML_SVE_MATMUL_H
#define ML_SVE_MATMUL_H

#include "kernels/sve/sve_matvec.h"

#define ML_SVE_MM_TOKENS 8 /* s0..s7 in ml_sve_mm_tile */

/* One token's block: sum + (float)sumi * (dw * dx), lanes = rows; wlo / whi
 * the block's words 0..3 / 4..7 (Q4_0: its low / high nibbles' values) */
ML_INLINE svfloat32_t ml_sve_mm_tok(svfloat32_t sum, svbool_t pg, svint8x4_t wlo, svint8x4_t whi, const int8_t *xq,
                                    const float *xd, svfloat32_t dw) {
    const svint8_t xlo = svld1rq_s8(svptrue_b8(), xq), xhi = svld1rq_s8(svptrue_b8(), xq + 16);
    svint32_t acc = svdup_n_s32(0);
    acc = svdot_lane_s32(acc, svget4_s8(wlo, 0), xlo, 0);
    acc = svdot_lane_s32(acc, svget4_s8(wlo, 1), xlo, 1);
    acc = svdot_lane_s32(acc, svget4_s8(wlo, 2), xlo, 2);
    acc = svdot_lane_s32(acc, svget4_s8(wlo, 3), xlo, 3);
    acc = svdot_lane_s32(acc, svget4_s8(whi, 0), xhi, 0);
    acc = svdot_lane_s32(acc, svget4_s8(whi, 1), xhi, 1);
    acc = svdot_lane_s32(acc, svget4_s8(whi, 2), xhi, 2);
    acc = svdot_lane_s32(acc, svget4_s8(whi, 3), xhi, 3);
    const svfloat32_t s = svmul_n_f32_x(pg, dw, *xd);
    return svadd_f32_x(pg, sum, svmul_f32_x(pg, svcvt_f32_s32_x(pg, acc), s));
}

/* Word k of the tile's block (ml_sve_word with the word's offset in the
 * scalar base: one offset vector for all words, so the tile's 8 weight
 * vectors, 8 sums and the token in flight fit the 32 z registers). */
ML_INLINE svint8_t ml_sve_mm_word(svbool_t pg, const int8_t *w, svuint32_t off, uint32_t k) {
    return ml_sve_word(pg, w + 4 * k, off, 0);
}

/* Q4_0 word k of the tile's block, split: t = byte ^ 0x88 holds each
 * nibble's value as 4-bit two's complement; the arithmetic shifts sign-extend
 * the low (<< 4 >> 4) and the high (>> 4) nibble. */
ML_INLINE svint8_t ml_sve_q4_t(svbool_t pg, const int8_t *w, svuint32_t off, uint32_t k) {
    return sveor_n_s8_x(svptrue_b8(), ml_sve_mm_word(pg, w, off, k), (int8_t)0x88);
}
ML_INLINE svint8_t ml_sve_q4_lo(svint8_t t) { return svasr_n_s8_x(svptrue_b8(), svlsl_n_s8_x(svptrue_b8(), t, 4), 4); }
ML_INLINE svint8_t ml_sve_q4_hi(svint8_t t) { return svasr_n_s8_x(svptrue_b8(), t, 4); }

/* Rows [r, r + svcntw()) under pg x nt tokens (a constant after inlining)
 * from token t0. */
ML_INLINE void ml_sve_mm_tile(float *Y, size_t ldy, const ml_qtensor *W, const ml_qbatch *X, int r, svbool_t pg,
                              int t0, int nt, int q4, ml_type st) {
    const int nb = W->cols / ML_QK;
    const size_t wbytes = q4 ? ML_Q4_BLOCK_BYTES : ML_Q8_BLOCK_BYTES, wstride = (size_t)nb * wbytes;
    const size_t n = (size_t)X->n;
    const size_t sb = (size_t)ml_scale_bytes(st);
    const svuint32_t off = svindex_u32(0, (uint32_t)wstride), doff = svindex_u32(0, (uint32_t)((size_t)nb * sb));
    const int8_t *w = W->q + (size_t)r * wstride, *xq = X->q + (size_t)t0 * n;
    const char *d = (const char *)W->d + (size_t)r * (size_t)nb * sb;
    const float *xd = X->d + (size_t)t0 * (size_t)nb;
    svfloat32_t s0 = svdup_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
    for (int b = 0; b < nb; b++, w += wbytes, d += sb, xq += ML_QK, xd++) {
        svint8x4_t wlo, whi;
        if (q4) {
            const svint8_t t0w = ml_sve_q4_t(pg, w, off, 0), t1w = ml_sve_q4_t(pg, w, off, 1);
            const svint8_t t2w = ml_sve_q4_t(pg, w, off, 2), t3w = ml_sve_q4_t(pg, w, off, 3);
            wlo = svcreate4_s8(ml_sve_q4_lo(t0w), ml_sve_q4_lo(t1w), ml_sve_q4_lo(t2w), ml_sve_q4_lo(t3w));
            whi = svcreate4_s8(ml_sve_q4_hi(t0w), ml_sve_q4_hi(t1w), ml_sve_q4_hi(t2w), ml_sve_q4_hi(t3w));
        } else {
            wlo = svcreate4_s8(ml_sve_mm_word(pg, w, off, 0), ml_sve_mm_word(pg, w, off, 1), ml_sve_mm_word(pg, w, off, 2),
                               ml_sve_mm_word(pg, w, off, 3));
            whi = svcreate4_s8(ml_sve_mm_word(pg, w, off, 4), ml_sve_mm_word(pg, w, off, 5), ml_sve_mm_word(pg, w, off, 6),
                               ml_sve_mm_word(pg, w, off, 7));
        }
        const svfloat32_t dw = ml_sve_ld_scales(pg, d, doff, st);
#define ML_SVE_MM_TOK(i) \
    if (nt > i) s##i = ml_sve_mm_tok(s##i, pg, wlo, whi, xq + (size_t)(i) * n, xd + (size_t)(i) * (size_t)nb, dw)
        ML_SVE_MM_TOK(0);
        ML_SVE_MM_TOK(1);
        ML_SVE_MM_TOK(2);
        ML_SVE_MM_TOK(3);
        ML_SVE_MM_TOK(4);
        ML_SVE_MM_TOK(5);
        ML_SVE_MM_TOK(6);
        ML_SVE_MM_TOK(7);
#undef ML_SVE_MM_TOK
    }
    float *y = Y + (size_t)t0 * ldy + (size_t)r;
#define ML_SVE_MM_STORE(i) \
    if (nt > i) svst1_f32(pg, y + (size_t)(i) * ldy, s##i)
    ML_SVE_MM_STORE(0);
    ML_SVE_MM_STORE(1);
    ML_SVE_MM_STORE(2);
    ML_SVE_MM_STORE(3);
    ML_SVE_MM_STORE(4);
    ML_SVE_MM_STORE(5);
    ML_SVE_MM_STORE(6);
    ML_SVE_MM_STORE(7);
#undef ML_SVE_MM_STORE
}

ML_INLINE void ml_sve_matmul(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1, int q4,
                             ml_type st) {
    const int rt = (int)svcntw();
    for (int r = r0; r < r1; r += rt) {
        const svbool_t pg = svwhilelt_b32(r, r1);
        int t = 0;
        for (; t + ML_SVE_MM_TOKENS <= X->n_tok; t += ML_SVE_MM_TOKENS)
            ml_sve_mm_tile(Y, (size_t)ldy, W, X, r, pg, t, ML_SVE_MM_TOKENS, q4, st);
        for (; t + 4 <= X->n_tok; t += 4) ml_sve_mm_tile(Y, (size_t)ldy, W, X, r, pg, t, 4, q4, st);
        for (; t + 2 <= X->n_tok; t += 2) ml_sve_mm_tile(Y, (size_t)ldy, W, X, r, pg, t, 2, q4, st);
        for (; t < X->n_tok; t++) ml_sve_mm_tile(Y, (size_t)ldy, W, X, r, pg, t, 1, q4, st);
    }
}

#endif
