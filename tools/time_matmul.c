/* The driver of tools/time_matmul.sh: what bounds a speculative
 * verification at the kernel level. It times one build's matmul
 * of T tokens beside its matvec (a decode step's kernel) on the same
 * weights, fp16 block scales, 1 thread, best of REPS runs, in ns per 16 rows
 * x 1 block:
 *   hot   one ROWS x COLS matrix, which the first run leaves in cache:
 *         the kernels' compute alone;
 *   cold  COPIES such matrices one after the other (make them outgrow the
 *         L3): the weights stream from memory, as in a model.
 * The matmul's hot figure against the matvec's cold one is the question:
 * when the batch's compute alone takes longer than streaming the weights,
 * no prefetching makes the batch cheaper than that ratio.
 * The weights are laid out as the loader lays them out for this build
 * (core/pack.h), unless ML_ROWS is set (the file's row-major layout).
 * usage: time_matmul q8|q4 ROWS COLS TOKENS COPIES REPS [l1|l2|hw]
 * (the matvec's streaming, core/tune.h; default l2). Built by the
 * script against a build's kernel objects (-DML_ISA=<isa>). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/pack.h"
#include "core/tune.h"
#include "tools/matmul_driver.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: time_matmul q8|q4 ROWS COLS TOKENS COPIES REPS [l1|l2|hw]\n");
        return 2;
    }
    if (argc == 8 && strcmp(argv[7], "l1") && strcmp(argv[7], "l2") && strcmp(argv[7], "hw")) {
        fprintf(stderr, "time_matmul: the 7th argument is l1, l2 or hw\n");
        return 2;
    }
    const char *mode = argc == 8 ? argv[7] : "l2";
    ml_set_stream(!strcmp(mode, "l1") ? ML_STREAM_L1 : !strcmp(mode, "hw") ? ML_STREAM_HW : ML_STREAM_L2);
    const int q4 = !strcmp(argv[1], "q4");
    const int rows = atoi(argv[2]), cols = atoi(argv[3]), n_tok = atoi(argv[4]), copies = atoi(argv[5]),
              reps = atoi(argv[6]);
    if ((!q4 && strcmp(argv[1], "q8")) || rows < 16 || cols < ML_QK || cols % ML_QK || n_tok < 1 || copies < 1 ||
        reps < 1) {
        fprintf(stderr, "time_matmul: expected q8|q4, ROWS >= 16, COLS a multiple of 32, and positive counts\n");
        return 2;
    }
    ml_qtensor *W = drv_buf(sizeof *W * (size_t)copies);
    for (int c = 0; c < copies; c++) W[c] = drv_weights(rows, cols, q4 ? ML_TYPE_Q4_0 : ML_TYPE_Q8_0, ML_TYPE_F16);
    if (ml_k_weight_layout(W[0].type, W[0].stype) == ML_LAYOUT_R16 && getenv("ML_ROWS") == NULL) {
        void *scratch = drv_buf(ml_pack_r16_scratch(&W[0])); /* as the loader lays them out */
        for (int c = 0; c < copies; c++) ml_pack_r16(&W[c], scratch);
    }
    ml_qbatch X = drv_acts(cols, n_tok);
    ml_qact x = {X.q, X.d, cols};
    float *Y = drv_buf((size_t)rows * (size_t)n_tok * 4);
    double mm = 1e30, mv = 1e30;
    for (int r = 0; r < reps; r++) {
        const double t0 = now();
        for (int c = 0; c < copies; c++) (q4 ? ml_k_matmul_q4_f16 : ml_k_matmul_q8_f16)(Y, rows, &W[c], &X, 0, rows);
        const double t1 = now();
        for (int c = 0; c < copies; c++) (q4 ? ml_k_matvec_q4_f16 : ml_k_matvec_q8_f16)(Y, &W[c], &x, 0, rows);
        const double t2 = now();
        if (t1 - t0 < mm) mm = t1 - t0;
        if (t2 - t1 < mv) mv = t2 - t1;
    }
    const double units = (double)copies * rows / 16 * (double)(cols / ML_QK);
    printf("%s %dx%d x%d, %d tokens: matmul %.2f ns, matvec %.2f ns per 16 rows x 1 block; matmul / matvec %.2f"
           " (check %g)\n",
           argv[1], rows, cols, copies, n_tok, mm / units * 1e9, mv / units * 1e9, mm / mv, (double)Y[0]);
    return 0;
}
