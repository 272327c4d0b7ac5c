/* The driver of tools/insn_matmul.sh: runs one build's matmul (its own, or
 * the generic ML_MATMUL_BY_TILES over its matvec, kernels/matmul_tiles.h)
 * `reps` times on random Q8_0 / Q4_0 weights, so that under qemu with the
 * insncount plugin, count(reps) - count(0) is the kernel's instructions.
 * usage: insn_matmul q8|q4 own|tiles ROWS COLS TOKENS REPS
 * Built by the script against a build's kernel objects (-DML_ISA=<isa>). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/ml_config.h"
#include "kernels/matmul_tiles.h"

static uint32_t rng = 12345;
static uint32_t next(void) { return rng = rng * 1664525u + 1013904223u; }

static void *buf(size_t n) {
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) exit(2);
    return p;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: insn_matmul q8|q4 own|tiles ROWS COLS TOKENS REPS\n");
        return 2;
    }
    const int q4 = !strcmp(argv[1], "q4"), own = !strcmp(argv[2], "own");
    const int rows = atoi(argv[3]), cols = atoi(argv[4]), n_tok = atoi(argv[5]), reps = atoi(argv[6]);
    const size_t nb = (size_t)cols / ML_QK, wq = (size_t)rows * (size_t)cols / (q4 ? 2 : 1);
    ml_qtensor W = {buf(wq), buf((size_t)rows * nb * 4), rows, cols, (uint8_t)(q4 ? ML_TYPE_Q4_0 : ML_TYPE_Q8_0)};
    ml_qbatch X = {buf((size_t)n_tok * (size_t)cols), buf((size_t)n_tok * nb * 4), cols, n_tok};
    float *Y = buf((size_t)rows * (size_t)n_tok * 4);
    for (size_t i = 0; i < wq; i++) W.q[i] = (int8_t)(q4 ? (int)(next() >> 24) : (int)(next() >> 24) % 255 - 127);
    for (size_t i = 0; i < (size_t)n_tok * (size_t)cols; i++) X.q[i] = (int8_t)((int)(next() >> 24) % 255 - 127);
    for (size_t i = 0; i < (size_t)rows * nb; i++) W.d[i] = (float)(next() >> 8) * 1e-9f;
    for (size_t i = 0; i < (size_t)n_tok * nb; i++) X.d[i] = (float)(next() >> 8) * 1e-8f;
    for (int r = 0; r < reps; r++) {
        if (own) (q4 ? ml_k_matmul_q4 : ml_k_matmul_q8)(Y, rows, &W, &X, 0, rows);
        else ml_matmul_by_tiles(q4 ? ml_k_matvec_q4 : ml_k_matvec_q8, Y, rows, &W, &X, 0, rows);
    }
    /* print one output so the calls cannot be dropped */
    printf("%g\n", (double)Y[rows * n_tok - 1]);
    return 0;
}
