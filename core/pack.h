/* The interleaved weight layout ML_LAYOUT_R16 (core/tensor.h), made in place
 * once at load for a build whose matvec reads it (ml_k_weight_layout).
 *
 * Group g (rows 16g .. 16g + 15, every full group) keeps the bytes it has in
 * ML_LAYOUT_ROWS, rearranged so that a kernel reads them in one linear
 * stream with 16 rows in the 16 int32 lanes of a 512-bit vector:
 *   quants: block b of the group is 16 * bpb bytes at q + (16g * nb + 16b) *
 *     bpb (bpb: ML_Q8_BLOCK_BYTES or ML_Q4_BLOCK_BYTES, nb = cols / 32), as
 *     bpb / 4 vectors of 64 bytes: vector j, bytes 4i .. 4i + 3 = row 16g +
 *     i's bytes 4j .. 4j + 3 of block b (Q4_0: the packed nibbles as stored);
 *   scales: block b's 16 scales (fp32 or fp16) at 16g * nb + 16b, row 16g +
 *     i's at + i.
 * The rows past the last full group stay where ML_LAYOUT_ROWS has them (the
 * groups fill exactly the bytes of their rows). A permutation of bytes: the
 * same quants and scales, so the same dots and results. */
#ifndef ML_PACK_H
#define ML_PACK_H

#include <stddef.h>

#include "core/tensor.h"

/* Bytes of scratch ml_pack_r16 needs for W: one group's quants. */
size_t ml_pack_r16_scratch(const ml_qtensor *W);

/* Rearrange W (ML_LAYOUT_ROWS, writable) into ML_LAYOUT_R16 in place;
 * scratch: ml_pack_r16_scratch(W) bytes, 64-byte aligned or not. */
void ml_pack_r16(ml_qtensor *W, void *scratch);

#endif
