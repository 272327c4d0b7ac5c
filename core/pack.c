#include "core/pack.h"

#include <string.h>

static size_t quant_bytes(const ml_qtensor *W) {
    return W->type == ML_TYPE_Q4_0 ? ML_Q4_BLOCK_BYTES : ML_Q8_BLOCK_BYTES;
}

size_t ml_pack_r16_scratch(const ml_qtensor *W) { return 16 * ((size_t)W->cols / ML_QK) * quant_bytes(W); }

/* One group at g: rows of nb blocks of bpb bytes, each block unit-byte
 * pieces (a vector lane's share). Copied to t, then written back block by
 * block, piece j of row i at 16 (b bpb + j unit) + i unit. */
static void pack_group(unsigned char *g, unsigned char *t, size_t nb, size_t bpb, size_t unit) {
    const size_t rb = nb * bpb;
    memcpy(t, g, 16 * rb);
    for (size_t b = 0; b < nb; b++)
        for (size_t j = 0; j < bpb / unit; j++)
            for (size_t i = 0; i < 16; i++)
                memcpy(g + 16 * (b * bpb + j * unit) + i * unit, t + i * rb + b * bpb + j * unit, unit);
}

void ml_pack_r16(ml_qtensor *W, void *scratch) {
    const size_t nb = (size_t)W->cols / ML_QK, bpb = quant_bytes(W), sb = (size_t)ml_scale_bytes((ml_type)W->stype);
    unsigned char *q = (unsigned char *)W->q, *d = (unsigned char *)W->d;
    for (size_t r = 0; r + 16 <= (size_t)W->rows; r += 16) {
        pack_group(q + r * nb * bpb, scratch, nb, bpb, 4);
        pack_group(d + r * nb * sb, scratch, nb, sb, sb);
    }
    W->layout = ML_LAYOUT_R16;
}
