/* The Q4_0 nibble unpack of the scalar twins (matvec.c, dequant.c): one
 * copy, so the format's layout is spelled out once in kernels/scalar/. */
#ifndef ML_SCALAR_Q4_UNPACK_H
#define ML_SCALAR_Q4_UNPACK_H

#include <stdint.h>

#include "core/quant.h"
#include "kernels/kernel_util.h"

/* Byte j of a block holds element j (low nibble) and 16+j (high nibble), each
 * stored as value + 8 (model/mlb.h). w: (32) values in [-8, 7]. */
ML_INLINE void ml_q4_unpack_scalar(int8_t *w, const uint8_t *p) {
    for (int j = 0; j < ML_Q4_BLOCK_BYTES; j++) {
        w[j] = (int8_t)((p[j] & 0x0F) - ML_Q4_OFFSET);
        w[j + ML_Q4_BLOCK_BYTES] = (int8_t)((p[j] >> 4) - ML_Q4_OFFSET);
    }
}

#endif
