/* Y = W X for a prompt batch, Q8_0 or Q4_0 weights, AVX-512 VNNI: 16-row
 * register tiles (matmul_tile.h) that meet MM_T tokens at a time.
 *
 * Loop order: a row tile (MM_GROUPS groups of 16 rows) and a chunk of
 * MM_KB blocks are transposed once into wt (stack, 36 KiB), then every
 * token passes over them; a token tile's activations are copied (xq,
 * stack, 32 KiB) and their block sums made (cx, 4 KiB) once per chunk for
 * all the row tile's groups. The weights are read from memory once per
 * call, in place (never converted where they are mapped). */
#include "kernels/avx512vnni/matmul_tile.h"

#include "config/ml_kernels.h"

#define MM_GROUPS 4 /* 16-row groups per row tile */
#define MM_TT 64    /* tokens per activation tile */

ML_INLINE int mm_min(int a, int b) { return a < b ? a : b; }

/* The full register tile, or a short one with its own constant count so
 * its accumulators stay in registers too. */
_Static_assert(MM_T == 8, "mm_tile_n has a case for each shorter count");
ML_INLINE void mm_tile_n(float *y, size_t ldy, __mmask16 m, int first, const mm_wtile *wt, int nb,
                         const int8_t (*xq)[MM_KB * ML_QK], const float *xd, size_t n, const int32_t (*cx)[MM_KB],
                         int nt) {
    switch (nt) {
    case 1: mm_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 1); break;
    case 2: mm_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 2); break;
    case 3: mm_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 3); break;
    case 4: mm_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 4); break;
    case 5: mm_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 5); break;
    case 6: mm_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 6); break;
    case 7: mm_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 7); break;
    default: mm_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, MM_T); break;
    }
}

ML_INLINE void mm_matmul(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1, int q4) {
    const int nbt = W->cols / ML_QK;
    const size_t bpb = q4 ? ML_Q4_BLOCK_BYTES : ML_Q8_BLOCK_BYTES, wstride = (size_t)nbt * bpb;
    mm_wtile wt[MM_GROUPS];
    int8_t xq[MM_TT][MM_KB * ML_QK];
    int32_t cx[MM_TT][MM_KB];
    for (int r = r0; r < r1; r += 16 * MM_GROUPS) {
        const int ng = (mm_min(r1 - r, 16 * MM_GROUPS) + 15) / 16;
        for (int b0 = 0; b0 < nbt; b0 += MM_KB) {
            const int nb = mm_min(nbt - b0, MM_KB);
            for (int g = 0; g < ng; g++) {
                const int rg = r + 16 * g;
                mm_wprep(&wt[g], W->q + (size_t)rg * wstride + (size_t)b0 * bpb, wstride, bpb,
                         W->d + (size_t)rg * (size_t)nbt + (size_t)b0, (size_t)nbt, mm_min(16, r1 - rg), nb, q4);
            }
            for (int t0 = 0; t0 < X->n_tok; t0 += MM_TT) {
                const int ntt = mm_min(X->n_tok - t0, MM_TT);
                mm_xprep(xq, cx, X, t0, ntt, b0, nb, q4);
                for (int g = 0; g < ng; g++) {
                    const int rg = r + 16 * g, nr = mm_min(16, r1 - rg);
                    const __mmask16 m = (__mmask16)((1u << nr) - 1u);
                    for (int t = 0; t < ntt; t += MM_T)
                        mm_tile_n(Y + (size_t)(t0 + t) * (size_t)ldy + (size_t)rg, (size_t)ldy, m, b0 == 0, &wt[g], nb,
                                  (const int8_t(*)[MM_KB * ML_QK])xq + t,
                                  X->d + (size_t)(t0 + t) * (size_t)nbt + (size_t)b0, (size_t)X->n,
                                  (const int32_t(*)[MM_KB])cx + t, mm_min(ntt - t, MM_T));
                }
            }
        }
    }
}

void ml_k_matmul_q8_avx512vnni(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mm_matmul(Y, ldy, W, X, r0, r1, 0);
}

void ml_k_matmul_q4_avx512vnni(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1) {
    mm_matmul(Y, ldy, W, X, r0, r1, 1);
}
