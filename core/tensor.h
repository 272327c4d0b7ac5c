/* Tensor views. A weight matrix is stored SoA: all quant bytes, then all
 * block scales, each array 64-byte aligned (DESIGN §4), so every ISA can use
 * aligned vector loads. Row r, block b: quants at q + (r*cols + b*32)*bpe,
 * scale at d[r*(cols/32) + b]. */
#ifndef ML_TENSOR_H
#define ML_TENSOR_H

#include <stdint.h>

#include "core/quant.h"

typedef struct {
    int8_t *q;    /* (rows, cols) int8 for Q8_0; (rows, cols/2) packed nibbles for Q4_0 */
    float *d;     /* (rows, cols/32) block scales */
    int rows, cols;
    uint8_t type; /* ml_type: ML_TYPE_Q8_0 or ML_TYPE_Q4_0 */
} ml_qtensor;

typedef struct {
    int8_t *q;    /* (n) int8 activations, in [-127, 127] */
    float *d;     /* (n/32) block scales */
    int n;
} ml_qact;        /* Q8_0 activations */

#endif
