/* One attention body for every SIMD build (sse2, avx2, AArch64 neon; the
 * builds above them reach these through the fallback chain), over fixed-name
 * primitives: the including kernels/<isa>/attn.c first defines
 *   ml_vf                   the float vector (4 or 8 lanes: ML_VF_LANES)
 *   ml_vf_load(p), ml_vf_store(p, v)     unaligned
 *   ml_vf_set1(c)           c in every lane
 *   ml_vf_madd(acc, a, b)   acc + a * b: multiply, then add (canon.h rule 1)
 *   ml_vf_div(a, b)         IEEE a / b (rule 4)
 *   ml_vf_fold_keys(acc)    rule 2's fold of ML_VF_LANES keys at once:
 *                           acc[j * ML_ATTN_PARTS + c] holds lanes
 *                           c * ML_VF_LANES .. of key j's 8 lane sums;
 *                           lane j of the result is key j's fold8
 * then includes this file; its ml_k_attn_scores_<isa> and
 * ml_k_attn_values_<isa> are ml_attn_scores and ml_attn_values.
 *
 * Float order (kernels/canon.h rules 2 and 6, bit-identical to the scalar
 * twin kernels/scalar/attn.c): a score is its key's 8-lane dot, folded, the
 * tail elements added one by one, then one IEEE division; an output element
 * adds o += p_t * v_t key by key. Scores take a tile of ML_VF_LANES keys
 * (a key's 8 lanes in ML_ATTN_PARTS vectors) so the fold leaves one key per
 * lane; values keep 8 vectors of outputs in registers over a block of keys
 * (two queries' 4 vectors, ..., eight queries' one).
 * Keys and values are read once per block for every query head of the
 * group (from L1). */
#ifndef ML_ATTN_BODY_H
#define ML_ATTN_BODY_H

#include <stddef.h>

#include "config/ml_kernels.h"
#include "kernels/canon.h"
#include "kernels/kernel_util.h"

/* Floats per vector, and vectors per key of a score tile (one rule-2 lane set). */
#define ML_VF_LANES ((int)(sizeof(ml_vf) / sizeof(float)))
#define ML_ATTN_PARTS (ML_CANON_LANES / ML_VF_LANES)

/* ML_ATTN_VALUES_ONLY: the values alone, for vectors wider than rule 2's 8
 * lanes (a score tile needs a whole lane set per vector; an output element
 * sums in order whatever its lane), and no ml_vf_fold_keys or ml_vf_div. */

/* Keys per block of the value sums: 16 rows of a head of 128 are 8 KiB. */
#define ML_ATTN_VBLOCK 16

#ifndef ML_ATTN_VALUES_ONLY
/* ---- scores --------------------------------------------------------------- */

/* s[0 .. nk-1] = the scores of query q against the nk (<= ML_VF_LANES) keys
 * at kt, rows ldk apart. A short tile repeats its last key in the missing
 * lanes (computed, never stored; nothing past the last key is read). */
ML_INLINE void ml_attn_score_tile(float *s, const float *q, const float *kt, size_t ldk, int nk, int h8, int hd,
                                  ml_vf sc) {
    const float *kj[ML_VF_LANES];
    ML_UNROLL for (int j = 0; j < ML_VF_LANES; j++) kj[j] = kt + (size_t)(j < nk ? j : nk - 1) * ldk;
    ml_vf acc[ML_VF_LANES * ML_ATTN_PARTS];
    ML_UNROLL for (int j = 0; j < ML_VF_LANES * ML_ATTN_PARTS; j++) acc[j] = ml_vf_set1(0.0f);
    for (int i = 0; i < h8; i += ML_CANON_LANES) {
        ml_vf qv[ML_ATTN_PARTS];
        ML_UNROLL for (int c = 0; c < ML_ATTN_PARTS; c++) qv[c] = ml_vf_load(q + i + c * ML_VF_LANES);
        ML_UNROLL for (int j = 0; j < ML_VF_LANES; j++) {
            ML_UNROLL for (int c = 0; c < ML_ATTN_PARTS; c++) {
                ml_vf *a = &acc[j * ML_ATTN_PARTS + c];
                *a = ml_vf_madd(*a, qv[c], ml_vf_load(kj[j] + i + c * ML_VF_LANES));
            }
        }
    }
    ml_vf d = ml_vf_fold_keys(acc);
    float f[ML_VF_LANES];
    if (h8 < hd) { /* rule 2's tail, element by element after the fold */
        ml_vf_store(f, d);
        for (int j = 0; j < nk; j++)
            for (int i = h8; i < hd; i++) f[j] += q[i] * kj[j][i];
        d = ml_vf_load(f);
    }
    d = ml_vf_div(d, sc);
    if (nk == ML_VF_LANES) {
        ml_vf_store(s, d);
    } else {
        ml_vf_store(f, d);
        for (int j = 0; j < nk; j++) s[j] = f[j];
    }
}

/* s[g*lds + t] = dot(q[g*ldq ..], k[t*ldk ..], hd) / scale, g < G, t < n:
 * a tile of keys for every query head of the group, then the next tile. */
ML_INLINE void ml_attn_scores(float *s, int lds, const float *q, int ldq, int G, const float *k, int ldk, int n,
                              int hd, float scale) {
    const int h8 = hd & ~(ML_CANON_LANES - 1);
    const ml_vf sc = ml_vf_set1(scale);
    int t = 0;
    for (; t + ML_VF_LANES <= n; t += ML_VF_LANES)
        for (int g = 0; g < G; g++)
            ml_attn_score_tile(s + (size_t)g * (size_t)lds + (size_t)t, q + (size_t)g * (size_t)ldq,
                               k + (size_t)t * (size_t)ldk, (size_t)ldk, ML_VF_LANES, h8, hd, sc);
    if (t < n) /* the last n % ML_VF_LANES keys: one short tile */
        for (int g = 0; g < G; g++)
            ml_attn_score_tile(s + (size_t)g * (size_t)lds + (size_t)t, q + (size_t)g * (size_t)ldq,
                               k + (size_t)t * (size_t)ldk, (size_t)ldk, n - t, h8, hd, sc);
}

#endif

/* ---- values --------------------------------------------------------------- */

/* Accumulators of a values chunk, queries x vectors: in registers with 16
 * or more vector registers (x86-64, AArch64; i686's 8 spill some). */
#define ML_ATTN_VACC 8

/* For nq queries, o[q*ldo + 0 .. nv*ML_VF_LANES-1] += p[q*ldp + j] *
 * v[j*ldv ..], j = 0 .. nb-1 in order: nq * nv (<= ML_ATTN_VACC, constants
 * after inlining) accumulators, each value vector loaded once for all nq
 * queries. One chain of adds per accumulator is latency bound, so a chunk
 * keeps eight in flight: two queries of a large head (four vectors), eight
 * of a small one (one vector: stories260K's head of 8 in a batch, whose
 * tile holds 16 tokens' queries). */
ML_INLINE void ml_attn_values_chunk(float *o, size_t ldo, const float *p, size_t ldp, int nq, const float *v,
                                    size_t ldv, int nb, int nv) {
    ml_vf a[ML_ATTN_VACC];
    ML_UNROLL for (int q = 0; q < nq; q++)
        ML_UNROLL for (int c = 0; c < nv; c++) a[q * nv + c] = ml_vf_load(o + (size_t)q * ldo + c * ML_VF_LANES);
    for (int j = 0; j < nb; j++) {
        ml_vf vj[4];
        ML_UNROLL for (int c = 0; c < nv; c++) vj[c] = ml_vf_load(v + (size_t)j * ldv + c * ML_VF_LANES);
        ML_UNROLL for (int q = 0; q < nq; q++) {
            const ml_vf pj = ml_vf_set1(p[(size_t)q * ldp + (size_t)j]);
            ML_UNROLL for (int c = 0; c < nv; c++) a[q * nv + c] = ml_vf_madd(a[q * nv + c], pj, vj[c]);
        }
    }
    ML_UNROLL for (int q = 0; q < nq; q++)
        ML_UNROLL for (int c = 0; c < nv; c++) ml_vf_store(o + (size_t)q * ldo + c * ML_VF_LANES, a[q * nv + c]);
}

/* ml_attn_values_chunk with nq and nv constants: nv 1 .. 4, nq a power of
 * two up to ML_ATTN_VACC / nv (ml_attn_values_qmax), a case each. */
_Static_assert(ML_ATTN_VACC == 8, "ml_attn_values_fixed has a case for each (nq, nv) with nq * nv <= 8");
ML_INLINE void ml_attn_values_fixed(float *o, size_t ldo, const float *p, size_t ldp, int nq, const float *v,
                                    size_t ldv, int nb, int nv) {
#define ML_ATTN_VCASE(Q, V)                                                                                            \
    case Q * 8 + V: ml_attn_values_chunk(o, ldo, p, ldp, Q, v, ldv, nb, V); break;
    switch (nq * 8 + nv) {
        ML_ATTN_VCASE(1, 1) ML_ATTN_VCASE(2, 1) ML_ATTN_VCASE(4, 1) ML_ATTN_VCASE(8, 1)
        ML_ATTN_VCASE(1, 2) ML_ATTN_VCASE(2, 2) ML_ATTN_VCASE(4, 2)
        ML_ATTN_VCASE(1, 3) ML_ATTN_VCASE(2, 3)
        ML_ATTN_VCASE(1, 4) ML_ATTN_VCASE(2, 4)
    default: break; /* unreachable: ml_attn_values_block asks for the cases above only */
    }
#undef ML_ATTN_VCASE
}

/* Queries a chunk of nv vectors takes at once: ML_ATTN_VACC / nv, rounded
 * down to a power of two. */
ML_INLINE int ml_attn_values_qmax(int nv) {
    int m = 1;
    while (2 * m * nv <= ML_ATTN_VACC) m *= 2;
    return m;
}

/* A block of nb keys for nq queries: the output in chunks of up to 4
 * vectors, each for as many queries at once as its accumulators allow, the
 * elements past the last whole vector in scalar code. */
ML_INLINE void ml_attn_values_block(float *o, size_t ldo, const float *p, size_t ldp, int nq, const float *v,
                                    size_t ldv, int nb, int hd) {
    const int nvec = hd / ML_VF_LANES;
    for (int c = 0; c < nvec; c += 4) {
        const int nv = nvec - c < 4 ? nvec - c : 4;
        const size_t i = (size_t)c * ML_VF_LANES;
        for (int q = 0; q < nq;) {
            int m = ml_attn_values_qmax(nv);
            while (m > nq - q) m /= 2;
            ml_attn_values_fixed(o + (size_t)q * ldo + i, ldo, p + (size_t)q * ldp, ldp, m, v + i, ldv, nb, nv);
            q += m;
        }
    }
    for (int q = 0; q < nq; q++)
        for (int i = nvec * ML_VF_LANES; i < hd; i++) {
            float a = o[(size_t)q * ldo + (size_t)i];
            for (int j = 0; j < nb; j++) a += p[(size_t)q * ldp + (size_t)j] * v[(size_t)j * ldv + (size_t)i];
            o[(size_t)q * ldo + (size_t)i] = a;
        }
}

/* o[g*ldo + i] += p[g*ldp + t] * v[t*ldv + i], t = 0 .. n-1 in order: a
 * block of keys for every query of the set, up to ML_ATTN_VACC at a time. */
ML_INLINE void ml_attn_values(float *o, int ldo, const float *p, int ldp, int G, const float *v, int ldv, int n,
                              int hd) {
    for (int t0 = 0; t0 < n; t0 += ML_ATTN_VBLOCK) {
        const int nb = n - t0 < ML_ATTN_VBLOCK ? n - t0 : ML_ATTN_VBLOCK;
        const float *vb = v + (size_t)t0 * (size_t)ldv;
        for (int g = 0; g < G; g += ML_ATTN_VACC)
            ml_attn_values_block(o + (size_t)g * (size_t)ldo, (size_t)ldo, p + (size_t)g * (size_t)ldp + (size_t)t0,
                                 (size_t)ldp, G - g < ML_ATTN_VACC ? G - g : ML_ATTN_VACC, vb, (size_t)ldv, nb, hd);
    }
}

#endif
