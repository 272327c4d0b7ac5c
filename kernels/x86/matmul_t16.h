/* The batch matmul (Q8_0 and Q4_0) with 8 rows in the lanes and the
 * weights as int16 pairs, over the 4-row body (kernels/x86/matmul_body.h,
 * included first with the build's dot header) for what it leaves:
 * Y[t*ldy + r] = W[r,:] . X[t] for the batch's tokens and rows [r0, r1).
 * The sse2 build, and sse41's Q8_0, run it on two 128-bit vectors of 4
 * rows (SSE2 instructions only), the avx2 build's Q8_0 on two 256-bit
 * vectors of a group's 8 rows each (MT16_YMM: two groups a tile), sse41's
 * Q4_0 with the weights as nibble columns (MT16_NIB, below). No (row,
 * token) dot is ever summed horizontally.
 *
 * MT16_NIB: a row's packed block is 4 dwords; dword k holds elements
 * 4k .. 4k + 3 in its low nibbles (column k) and 16 + 4k .. in its high
 * ones (column 4 + k). Transposed 4 rows at a time and split, column c
 * of 4 rows is one vector of nibbles (unsigned: no sign fix) that meets
 * the token's bytes 4c .. 4c + 3 in every lane: 8 pmaddubsw per 4 rows
 * and block, summed in int16 (8 * 2 * 15 * 127 < 2^15), widened by one
 * pmaddwd, plus -8 * sum(x) (mt16_xwiden). 4.25 instructions per (row,
 * token, block) against the pairs' 8: sse41 Q4_0 at 12-128 tokens
 * 1.27-1.37x faster than its 4-row body (Zen 5, 2048x2048 from memory).
 *
 * A block of 8 rows is widened and transposed once per call into 16 pairs
 * of vectors: pair j, vector h, int32 lane i = row 4h + i's elements 2j
 * and 2j + 1 as two int16 (Q8_0 sign-extended, Q4_0 the nibble minus 8:
 * signed, so no offset to remove). A token's block is widened once per
 * row tile (mt16_xprep): 128-bit, into 16 vectors, vector j = its
 * elements 2j, 2j + 1 in every lane; 256-bit, into 32 int16 whose pairs
 * are broadcast from memory. A (token, block) then costs 16 pmaddwd and
 * 16 paddd per 4 rows, int32 lanes (|sumi| <= 32 * 127 * 127), with no
 * shuffle.
 *
 * Loop order: a row tile (MT16_G groups of 8 rows) and a chunk of MT16_KB
 * blocks are transposed once into wt (stack, 17 KiB, 9 as nibble columns:
 * in the L1 of every CPU these builds target), and the next chunk's rows
 * are prefetched; MT16_T tokens at a time are widened (xb) and pass over
 * every group. A batch under MT16_MIN tokens and the rows past the last
 * full group run the 4-row body.
 *
 * Float order (kernels/canon.h rule 5): each lane, for its (row, token),
 * adds (float)sumi * (dw * dx) block after block, separate mul and add,
 * from 0.0f; between chunks of blocks the running sum waits in Y itself. */
#ifndef ML_X86_MATMUL_T16_H
#define ML_X86_MATMUL_T16_H

#ifndef MT16_YMM
#define MT16_YMM 0 /* 8 rows in one 256-bit vector (avx2) */
#endif

#ifndef MT16_NIB
#define MT16_NIB 0 /* Q4_0 as nibble columns and pmaddubsw (sse41) */
#endif

#include <emmintrin.h>
#if MT16_YMM
#include <immintrin.h>
#endif
#if MT16_NIB
#include <tmmintrin.h>
#endif
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/x86/matmul_body.h"

/* Measured at 128 tokens (Zen 5, 256x768 in cache): 8 groups of 4 blocks
 * 4% faster than 4 of 8, the same 17 KiB. Tokens a tile and the smallest
 * batch are the including build's (these defaults: sse2's and sse41's; 2,
 * 3 and 4 tokens a tile within 2% there, and 8 tokens already faster than
 * the 4-row body). */
#define MT16_KB 4 /* blocks per chunk */
#define MT16_G 8  /* 8-row groups per row tile */
#ifndef MT16_T
#define MT16_T 2 /* tokens per register tile */
#endif
#ifndef MT16_ACC_Y
#define MT16_ACC_Y 0 /* the sums wait in Y between blocks (mt16_tile) */
#endif
#ifndef MT16_MIN
#define MT16_MIN 8 /* smaller batches: the 4-row body */
#endif

/* Vectors per block and 4 rows: 16 pairs, or 8 nibble columns. */
#define MT16_WV (MT16_NIB ? 8 : 16)

/* One 8-row group's chunk of weights, widened and transposed. */
typedef struct {
    __m128i w[MT16_KB][MT16_WV][2]; /* (block, pair or column j, rows 4h..4h+3) */
    __m128 d[MT16_KB][2];      /* the rows' block scales, rows 4h..4h+3 */
} mt16_wtile;

ML_INLINE int mt16_min(int a, int b) { return a < b ? a : b; }

/* bytes 0..7 and 8..15 of v sign-extended to int16 */
ML_INLINE void mt16_widen(__m128i v, __m128i *e) {
    e[0] = _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8);
    e[1] = _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8);
}

/* A row's block as 4 int16 vectors in element order (8 elements each). */
ML_INLINE void mt16_row(__m128i *e, const int8_t *w, ml_type type) {
    __m128i lo, hi;
    if (type == ML_TYPE_Q4_0) { /* byte j: elements j (low nibble), 16 + j */
        const __m128i v = _mm_loadu_si128((const __m128i *)w), m = _mm_set1_epi8(0x0F), o = _mm_set1_epi8(ML_Q4_OFFSET);
        lo = _mm_sub_epi8(_mm_and_si128(v, m), o);
        hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), m), o);
    } else {
        lo = _mm_loadu_si128((const __m128i *)w);
        hi = _mm_loadu_si128((const __m128i *)(w + 16));
    }
    mt16_widen(lo, e);
    mt16_widen(hi, e + 2);
}

/* Blocks b0 .. b0 + nb - 1 of W's 8 rows from row r, and their scales
 * (of type st: converted exactly). */
ML_INLINE void mt16_wprep(mt16_wtile *wt, const ml_qtensor *W, int r, int b0, int nb, ml_type type, ml_type st) {
    const size_t nbt = (size_t)(W->cols / ML_QK), bpb = ml_x86_wbytes(type), wstride = nbt * bpb;
    const int8_t *q = W->q + (size_t)r * wstride + (size_t)b0 * bpb;
    const void *d = ml_x86_sptr(W->d, (size_t)r * nbt + (size_t)b0, st);
    for (int b = 0; b < nb; b++)
        ML_UNROLL for (int h = 0; h < 2; h++) {
#if MT16_NIB
            /* dword k of the 4 rows' packed blocks: elements 4k .. 4k + 3
             * (low nibbles, column k) and 16 + 4k .. (high, column 4 + k) */
            __m128 r[4];
            ML_UNROLL for (int i = 0; i < 4; i++)
                r[i] = _mm_castsi128_ps(_mm_loadu_si128((const __m128i *)(q + (size_t)(4 * h + i) * wstride + (size_t)b * bpb)));
            _MM_TRANSPOSE4_PS(r[0], r[1], r[2], r[3]);
            const __m128i m = _mm_set1_epi8(0x0F);
            ML_UNROLL for (int k = 0; k < 4; k++) {
                wt->w[b][k][h] = _mm_and_si128(_mm_castps_si128(r[k]), m);
                wt->w[b][4 + k][h] = _mm_and_si128(_mm_srli_epi16(_mm_castps_si128(r[k]), 4), m);
            }
#else
            __m128i e[4][4]; /* row 4h + i: e[i] */
            ML_UNROLL for (int i = 0; i < 4; i++) mt16_row(e[i], q + (size_t)(4 * h + i) * wstride + (size_t)b * bpb, type);
            ML_UNROLL for (int k = 0; k < 4; k++) { /* pairs 4k .. 4k + 3: one 4x4 dword transpose */
                __m128 r0 = _mm_castsi128_ps(e[0][k]), r1 = _mm_castsi128_ps(e[1][k]);
                __m128 r2 = _mm_castsi128_ps(e[2][k]), r3 = _mm_castsi128_ps(e[3][k]);
                _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
                wt->w[b][4 * k][h] = _mm_castps_si128(r0);
                wt->w[b][4 * k + 1][h] = _mm_castps_si128(r1);
                wt->w[b][4 * k + 2][h] = _mm_castps_si128(r2);
                wt->w[b][4 * k + 3][h] = _mm_castps_si128(r3);
            }
#endif
            wt->d[b][h] = _mm_setr_ps(ml_scale_at(d, (size_t)(4 * h) * nbt + (size_t)b, st),
                                      ml_scale_at(d, (size_t)(4 * h + 1) * nbt + (size_t)b, st),
                                      ml_scale_at(d, (size_t)(4 * h + 2) * nbt + (size_t)b, st),
                                      ml_scale_at(d, (size_t)(4 * h + 3) * nbt + (size_t)b, st));
        }
}

/* The vectors of a tile: a group's 8 rows as two 4-lane vectors, or with
 * MT16_YMM (the avx2 build) two groups as two 8-lane vectors, each group's
 * weight tile read as 256-bit vectors (w[b][j][0..1]). */
#if MT16_YMM
#define MT16_H 2   /* vectors a tile: two groups */
#define MT16_L 8   /* rows per vector: a group */
#define MT16_GPT 2 /* groups a tile */
#define MT16_OP(op) _mm256_##op
typedef __m256i mt16_vi;
typedef __m256 mt16_vf;
ML_INLINE mt16_vi mt16_ldw(const __m128i *p) { return _mm256_loadu_si256((const __m256i *)p); }
#define mt16_zi _mm256_setzero_si256
/* a token's block: its 32 elements as int16; pair j broadcast from memory */
typedef int16_t mt16_xblock[ML_QK];
ML_INLINE mt16_vi mt16_ldx(const int16_t *p, int j) {
    int32_t v;
    memcpy(&v, p + 2 * j, sizeof v);
    return _mm256_set1_epi32(v);
}
ML_INLINE void mt16_xwiden(int16_t *xw, const int8_t *p) {
    _mm256_storeu_si256((__m256i *)xw, _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p)));
    _mm256_storeu_si256((__m256i *)(xw + 16), _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(p + 16))));
}
#else
#define MT16_H 2   /* vectors a tile: a group's two halves */
#define MT16_L 4   /* rows per vector */
#define MT16_GPT 1 /* groups a tile */
#define MT16_OP(op) _mm_##op
typedef __m128i mt16_vi;
typedef __m128 mt16_vf;
ML_INLINE mt16_vi mt16_ldw(const __m128i *p) { return _mm_load_si128(p); }
#define mt16_zi _mm_setzero_si128
#if MT16_NIB
/* a token's block: vector c = its bytes 4c .. 4c + 3 in every lane (the
 * activations of nibble column c), vector 8 = -8 * sum(x) in every lane
 * (the 4-row body's lanes of it, sse41_dot.h, summed) */
typedef __m128i mt16_xblock[9];
ML_INLINE void mt16_xwiden(__m128i *xv, const int8_t *p) {
    ML_UNROLL for (int c = 0; c < 8; c++) {
        int32_t v;
        memcpy(&v, p + 4 * c, sizeof v);
        xv[c] = _mm_set1_epi32(v);
    }
    ml_x86_x xs;
    ml_x86_xprep(&xs, p, ML_TYPE_Q4_0);
    __m128i s = _mm_add_epi32(xs.corr, _mm_shuffle_epi32(xs.corr, _MM_SHUFFLE(1, 0, 3, 2)));
    xv[8] = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
}
#else
/* a token's block: vector j = its elements 2j, 2j + 1 (int16) in every lane */
typedef __m128i mt16_xblock[16];
ML_INLINE mt16_vi mt16_ldx(const __m128i *p, int j) { return p[j]; }
ML_INLINE void mt16_xwiden(__m128i *xv, const int8_t *p) {
    __m128i e[4];
    mt16_widen(_mm_loadu_si128((const __m128i *)p), e);
    mt16_widen(_mm_loadu_si128((const __m128i *)(p + 16)), e + 2);
    ML_UNROLL for (int k = 0; k < 4; k++) {
        xv[4 * k] = _mm_shuffle_epi32(e[k], 0x00);
        xv[4 * k + 1] = _mm_shuffle_epi32(e[k], 0x55);
        xv[4 * k + 2] = _mm_shuffle_epi32(e[k], 0xAA);
        xv[4 * k + 3] = _mm_shuffle_epi32(e[k], 0xFF);
    }
}
#endif
#endif
#define mt16_zf MT16_OP(setzero_ps)
#define mt16_ldf MT16_OP(loadu_ps)
#define mt16_stf MT16_OP(storeu_ps)
ML_INLINE mt16_vf mt16_ldd(const __m128 *p) { return MT16_OP(loadu_ps)((const float *)p); }
ML_INLINE mt16_vi mt16_dot(mt16_vi s, mt16_vi w, mt16_vi x) { return MT16_OP(add_epi32)(s, MT16_OP(madd_epi16)(w, x)); }
ML_INLINE mt16_vf mt16_step(mt16_vf acc, mt16_vi s, mt16_vf dw, float dx) {
    return MT16_OP(add_ps)(acc, MT16_OP(mul_ps)(MT16_OP(cvtepi32_ps)(s), MT16_OP(mul_ps)(dw, MT16_OP(set1_ps)(dx))));
}
/* Vector h of a tile over groups wt[0 .. MT16_GPT): its pair or column j
 * of block b, and its rows' scales of block b. */
ML_INLINE mt16_vi mt16_wv(const mt16_wtile *wt, int b, int j, int h) {
    return MT16_GPT == 1 ? mt16_ldw(&wt->w[b][j][h]) : mt16_ldw(&wt[h].w[b][j][0]);
}
ML_INLINE mt16_vf mt16_dv(const mt16_wtile *wt, int b, int h) {
    return MT16_GPT == 1 ? mt16_ldd(&wt->d[b][h]) : mt16_ldd(&wt[h].d[b][0]);
}

/* xb[t][b] = token t's block b, for nt tokens from x (n bytes apart) and nb blocks */
ML_INLINE void mt16_xprep(mt16_xblock (*xb)[MT16_KB], const int8_t *x, size_t n, int nt, int nb) {
    for (int t = 0; t < nt; t++)
        for (int b = 0; b < nb; b++) mt16_xwiden(xb[t][b], x + (size_t)t * n + (size_t)b * ML_QK);
}

/* nt (<= MT16_T) tokens of nh (<= MT16_H) vectors of rows over nb blocks:
 * acc from Y (or 0.0f on the first chunk), back to Y. y: token 0's first
 * row; wt: the tile's groups (MT16_GPT); xd: token 0's scales at the
 * chunk's block 0 (nbt per token). MT16_ACC_Y: the sums wait in Y between
 * blocks (a load and a store per block), leaving the registers to a larger
 * tile. The pairs loop is unrolled 8 times, not 16: fully unrolled, gcc
 * regroups its additions and computes all 64 products first, through the
 * stack (1.9x slower). */
ML_INLINE void mt16_tile(float *y, size_t ldy, int first, const mt16_wtile *wt, int nb,
                         const mt16_xblock (*xb)[MT16_KB], const float *xd, size_t nbt, int nt, int nh) {
#if MT16_ACC_Y
    if (first)
        ML_UNROLL for (int t = 0; t < MT16_T; t++)
            ML_UNROLL for (int h = 0; h < MT16_H; h++)
                if (t < nt && h < nh) mt16_stf(y + (size_t)t * ldy + MT16_L * (size_t)h, mt16_zf());
#else
    mt16_vf acc[MT16_T][MT16_H];
    ML_UNROLL for (int t = 0; t < MT16_T; t++)
        ML_UNROLL for (int h = 0; h < MT16_H; h++)
            if (t < nt && h < nh) acc[t][h] = first ? mt16_zf() : mt16_ldf(y + (size_t)t * ldy + MT16_L * (size_t)h);
#endif
    for (int b = 0; b < nb; b++) {
        mt16_vi s[MT16_T][MT16_H];
        ML_UNROLL for (int t = 0; t < MT16_T; t++)
            ML_UNROLL for (int h = 0; h < MT16_H; h++) s[t][h] = mt16_zi();
#if MT16_NIB
        /* a column's 4 nibbles times its 4 bytes, pairs in int16; the 8
         * columns' sums fit (8 * 2 * 15 * 127 < 2^15), widened once.
         * Column after column, each column's weights loaded once for every
         * token of the tile: token after token, each pmaddubsw loaded both
         * operands, and Zen 4 loads 2 vectors a cycle (768x768, 64 tokens:
         * 765 -> 638 ns per 16 rows x block, gcc and clang alike). Not
         * unrolled: unrolled, gcc spills the tile's sums. */
        __m128i p[MT16_T][MT16_H];
        ML_UNROLL for (int t = 0; t < MT16_T; t++)
            ML_UNROLL for (int h = 0; h < MT16_H; h++) p[t][h] = _mm_setzero_si128();
        ML_UNROLL_N(1) for (int c = 0; c < 8; c++) {
            __m128i w[MT16_H], x[MT16_T];
            ML_UNROLL for (int h = 0; h < MT16_H; h++) w[h] = mt16_wv(wt, b, c, h);
            ML_UNROLL for (int t = 0; t < MT16_T; t++)
                if (t < nt) x[t] = _mm_load_si128(&xb[t][b][c]);
            ML_UNROLL for (int t = 0; t < MT16_T; t++) {
                if (t >= nt) continue;
                ML_UNROLL for (int h = 0; h < MT16_H; h++) {
                    const __m128i q = _mm_maddubs_epi16(w[h], x[t]);
                    p[t][h] = _mm_add_epi16(p[t][h], q);
                }
            }
        }
        ML_UNROLL for (int t = 0; t < MT16_T; t++) {
            if (t >= nt) continue;
            ML_UNROLL for (int h = 0; h < MT16_H; h++)
                s[t][h] = _mm_add_epi32(_mm_madd_epi16(p[t][h], _mm_set1_epi16(1)), xb[t][b][8]);
        }
#else
        ML_UNROLL_N(8) for (int j = 0; j < 16; j++) {
            mt16_vi w[MT16_H];
            ML_UNROLL for (int h = 0; h < MT16_H; h++) w[h] = h < nh ? mt16_wv(wt, b, j, h) : mt16_zi();
            ML_UNROLL for (int t = 0; t < MT16_T; t++) {
                if (t >= nt) continue;
                const mt16_vi x = mt16_ldx(xb[t][b], j);
                ML_UNROLL for (int h = 0; h < MT16_H; h++)
                    if (h < nh) s[t][h] = mt16_dot(s[t][h], w[h], x);
            }
        }
#endif
        ML_UNROLL for (int t = 0; t < MT16_T; t++) {
            if (t >= nt) continue;
            ML_UNROLL for (int h = 0; h < MT16_H; h++) {
                if (h >= nh) continue;
#if MT16_ACC_Y
                float *yv = y + (size_t)t * ldy + MT16_L * (size_t)h;
                mt16_stf(yv, mt16_step(mt16_ldf(yv), s[t][h], mt16_dv(wt, b, h), xd[(size_t)t * nbt + (size_t)b]));
#else
                acc[t][h] = mt16_step(acc[t][h], s[t][h], mt16_dv(wt, b, h), xd[(size_t)t * nbt + (size_t)b]);
#endif
            }
        }
    }
#if !MT16_ACC_Y
    ML_UNROLL for (int t = 0; t < MT16_T; t++)
        ML_UNROLL for (int h = 0; h < MT16_H; h++)
            if (t < nt && h < nh) mt16_stf(y + (size_t)t * ldy + MT16_L * (size_t)h, acc[t][h]);
#endif
}

/* The weights and scales of the chunk after rows [r, r + 8 * MT16_G)'s
 * blocks from b0 (the next row tile's first at the end of a row), into
 * the cache while this chunk computes: its rows are runs of MT16_KB blocks
 * that the hardware prefetchers do not follow. r8: where the groups end. */
ML_INLINE void mt16_prefetch(const ml_qtensor *W, int r, int b0, int r8, ml_type type, ml_type st) {
    const int nbt = W->cols / ML_QK;
    if ((b0 += MT16_KB) >= nbt) b0 = 0, r += 8 * MT16_G;
    const size_t bpb = ml_x86_wbytes(type), wstride = (size_t)nbt * bpb;
    const size_t len = (size_t)mt16_min(nbt - b0, MT16_KB) * bpb;
    for (int i = r; i < mt16_min(r8, r + 8 * MT16_G); i++) {
        const char *q = (const char *)W->q + (size_t)i * wstride + (size_t)b0 * bpb;
        for (size_t l = 0; l < len; l += 64) _mm_prefetch(q + l, _MM_HINT_T0);
        _mm_prefetch(q + len - 1, _MM_HINT_T0);
        _mm_prefetch((const char *)ml_x86_sptr(W->d, (size_t)i * (size_t)nbt + (size_t)b0, st), _MM_HINT_T0);
    }
}

/* A tile of MT16_T tokens, or the batch's last nt < MT16_T one at a time;
 * NH vectors, a constant (a function around these calls made gcc spill in
 * the nibble loop: 645 -> 765 ns at 768x768, 64 tokens). */
#define MT16_TILES(NH)                                                                                                 \
    if (nt == MT16_T)                                                                                                  \
        mt16_tile(y, (size_t)ldy, b0 == 0, &wt[g], nb, (const mt16_xblock(*)[MT16_KB])xb, xd, (size_t)nbt, MT16_T,   \
                  NH);                                                                                                 \
    else                                                                                                               \
        for (int k = 0; k < nt; k++)                                                                                   \
            mt16_tile(y + (size_t)k * (size_t)ldy, (size_t)ldy, b0 == 0, &wt[g], nb,                                   \
                      (const mt16_xblock(*)[MT16_KB])xb + k, xd + (size_t)k * (size_t)nbt, (size_t)nbt, 1, NH);

/* Y = W X for weights of type type with scales of type st, rows [r0, r1) */
ML_INLINE void mt16_matmul(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1, ml_type type,
                           ml_type st) {
    const int r8 = ml_x86_mm_rest8(Y, ldy, W, X, r0, r1, MT16_MIN, type, st);
    const int nbt = W->cols / ML_QK;
    const size_t n = (size_t)X->n;
    mt16_wtile wt[MT16_G];
    mt16_xblock xb[MT16_T][MT16_KB];
    for (int r = r0; r < r8; r += 8 * MT16_G) {
        const int ng = mt16_min((r8 - r) / 8, MT16_G);
        for (int b0 = 0; b0 < nbt; b0 += MT16_KB) {
            const int nb = mt16_min(nbt - b0, MT16_KB);
            for (int g = 0; g < ng; g++) mt16_wprep(&wt[g], W, r + 8 * g, b0, nb, type, st);
            mt16_prefetch(W, r, b0, r8, type, st);
            for (int t = 0; t < X->n_tok; t += MT16_T) {
                const int nt = mt16_min(X->n_tok - t, MT16_T);
                mt16_xprep(xb, X->q + (size_t)t * n + (size_t)b0 * ML_QK, n, nt, nb);
                for (int g = 0; g < ng; g += MT16_GPT) {
                    float *y = Y + (size_t)t * (size_t)ldy + (size_t)(r + 8 * g);
                    const float *xd = X->d + (size_t)t * (size_t)nbt + (size_t)b0;
#if MT16_GPT == 1
                    MT16_TILES(MT16_H)
#else
                    /* the row tile's last group alone, where a tile takes two */
                    if (g + 1 < ng) {
                        MT16_TILES(MT16_H)
                    } else {
                        MT16_TILES(1)
                    }
#endif
                }
            }
        }
    }
}

#undef MT16_TILES

#endif
