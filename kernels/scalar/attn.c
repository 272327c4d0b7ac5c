/* The two halves of attention for one group of query heads that share a
 * K/V head (grouped-query attention), over a block of keys: one pass over
 * the keys and values serves every query of the group. In the canonical
 * order of kernels/canon.h rule 6: each score is the rule-2 8-lane dot then
 * one IEEE division, each output element a sequential sum over the keys.
 * The SIMD builds share one body over their float vectors, which this twin
 * documents (kernels/attn_body.h). */
#include "config/ml_kernels.h"
#include "kernels/canon.h"

/* s[g*lds + t] = dot(q[g*ldq ..], k[t*ldk ..], hd) / scale, g < G, t < n. */
void ml_k_attn_scores_scalar(float *s, int lds, const float *q, int ldq, int G, const float *k, int ldk, int n,
                             int hd, float scale) {
    const int h8 = hd & ~(ML_CANON_LANES - 1);
    for (int t = 0; t < n; t++) {
        const float *kt = k + (size_t)t * (size_t)ldk;
        for (int g = 0; g < G; g++) {
            const float *qg = q + (size_t)g * (size_t)ldq;
            float lane[ML_CANON_LANES] = {0};
            for (int i = 0; i < h8; i++) lane[i % ML_CANON_LANES] += qg[i] * kt[i];
            float d = ml_canon_fold8(lane);
            for (int i = h8; i < hd; i++) d += qg[i] * kt[i];
            s[(size_t)g * (size_t)lds + (size_t)t] = d / scale;
        }
    }
}

/* o[g*ldo + i] += p[g*ldp + t] * v[t*ldv + i], t = 0 .. n-1 in order. */
void ml_k_attn_values_scalar(float *o, int ldo, const float *p, int ldp, int G, const float *v, int ldv, int n,
                             int hd) {
    for (int t = 0; t < n; t++) {
        const float *vt = v + (size_t)t * (size_t)ldv;
        for (int g = 0; g < G; g++) {
            float *og = o + (size_t)g * (size_t)ldo;
            const float a = p[(size_t)g * (size_t)ldp + (size_t)t];
            for (int i = 0; i < hd; i++) og[i] += a * vt[i];
        }
    }
}
