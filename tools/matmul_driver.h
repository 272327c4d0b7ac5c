/* What tools/insn_matmul.c and tools/time_matmul.c share: a fixed
 * pseudo-random stream, zeroed 64-byte-aligned buffers that exit on failure,
 * and random weights and activations in the kernels' ranges (Q8_0 quants
 * in [-127, 127], Q4_0 any nibbles). */
#ifndef ML_TOOLS_MATMUL_DRIVER_H
#define ML_TOOLS_MATMUL_DRIVER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/ml_config.h"

static uint32_t drv_rng = 12345;
static uint32_t drv_next(void) { return drv_rng = drv_rng * 1664525u + 1013904223u; }
static int8_t drv_q8(void) { return (int8_t)((int)(drv_next() >> 24) % 255 - 127); }

static void *drv_buf(size_t n) {
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "matmul driver: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    memset(p, 0, n);
    return p;
}

/* rows x cols weights of type t (Q8_0 or Q4_0), scales of type st (fp32
 * about 1e-9 .. 1.7e-2, fp16 about 1e-3). */
static ml_qtensor drv_weights(int rows, int cols, ml_type t, ml_type st) {
    const size_t n = (size_t)rows * (size_t)cols, nb = n / ML_QK, wq = t == ML_TYPE_Q4_0 ? n / 2 : n;
    ml_qtensor w = {.q = drv_buf(wq), .d = drv_buf(nb * (st == ML_TYPE_F16 ? 2 : 4)), .rows = rows, .cols = cols,
                    .type = (uint8_t)t, .stype = (uint8_t)st};
    for (size_t i = 0; i < wq; i++) w.q[i] = t == ML_TYPE_Q4_0 ? (int8_t)(drv_next() >> 24) : drv_q8();
    for (size_t i = 0; i < nb; i++) {
        if (st == ML_TYPE_F16) w.dh[i] = (uint16_t)(0x1400 + (drv_next() >> 24));
        else w.d[i] = (float)(drv_next() >> 8) * 1e-9f;
    }
    return w;
}

/* n_tok tokens of cols Q8_0 activations. */
static ml_qbatch drv_acts(int cols, int n_tok) {
    const size_t n = (size_t)n_tok * (size_t)cols;
    ml_qbatch X = {drv_buf(n), drv_buf(n / ML_QK * 4), cols, n_tok};
    for (size_t i = 0; i < n; i++) X.q[i] = drv_q8();
    for (size_t i = 0; i < n / ML_QK; i++) X.d[i] = (float)(drv_next() >> 8) * 1e-8f;
    return X;
}

#endif
