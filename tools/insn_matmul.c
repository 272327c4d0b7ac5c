/* The driver of tools/insn_matmul.sh: runs one build's matmul (its own, or
 * the generic ML_MATMUL_BY_TILES over its matvec, kernels/matmul_tiles.h)
 * `reps` times on random Q8_0 / Q4_0 weights, so that under qemu with the
 * insncount plugin, count(reps) - count(0) is the kernel's instructions.
 * usage: insn_matmul q8|q4 own|tiles ROWS COLS TOKENS REPS
 * Built by the script against a build's kernel objects (-DML_ISA=<isa>). */
#include <stdio.h>
#include <string.h>

#include "kernels/matmul_tiles.h"
#include "tools/matmul_driver.h"

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: insn_matmul q8|q4 own|tiles ROWS COLS TOKENS REPS\n");
        return 2;
    }
    const int q4 = !strcmp(argv[1], "q4"), own = !strcmp(argv[2], "own");
    const int rows = atoi(argv[3]), cols = atoi(argv[4]), n_tok = atoi(argv[5]), reps = atoi(argv[6]);
    ml_qtensor W = drv_weights(rows, cols, q4 ? ML_TYPE_Q4_0 : ML_TYPE_Q8_0, ML_TYPE_F32);
    ml_qbatch X = drv_acts(cols, n_tok);
    float *Y = drv_buf((size_t)rows * (size_t)n_tok * 4);
    for (int r = 0; r < reps; r++) {
        if (own) (q4 ? ml_k_matmul_q4 : ml_k_matmul_q8)(Y, rows, &W, &X, 0, rows);
        else ml_matmul_by_tiles(q4 ? ml_k_matvec_q4 : ml_k_matvec_q8, Y, rows, &W, &X, 0, rows);
    }
    /* print one output so the calls cannot be dropped */
    printf("%g\n", (double)Y[rows * n_tok - 1]);
    return 0;
}
