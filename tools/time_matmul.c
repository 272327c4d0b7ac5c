/* The driver of tools/time_matmul.sh: what bounds a speculative
 * verification (issue 26) at the kernel level. It times one build's matmul
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
 * usage: time_matmul q8|q4 ROWS COLS TOKENS COPIES REPS
 * Built by the script against a build's kernel objects (-DML_ISA=<isa>). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/ml_config.h"

static uint32_t rng = 12345;
static uint32_t next(void) { return rng = rng * 1664525u + 1013904223u; }

static void *buf(size_t n) {
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "time_matmul: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    memset(p, 0, n);
    return p;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: time_matmul q8|q4 ROWS COLS TOKENS COPIES REPS\n");
        return 2;
    }
    const int q4 = !strcmp(argv[1], "q4");
    const int rows = atoi(argv[2]), cols = atoi(argv[3]), n_tok = atoi(argv[4]), copies = atoi(argv[5]),
              reps = atoi(argv[6]);
    if ((!q4 && strcmp(argv[1], "q8")) || rows < 16 || cols < ML_QK || cols % ML_QK || n_tok < 1 || copies < 1 ||
        reps < 1) {
        fprintf(stderr, "time_matmul: expected q8|q4, ROWS >= 16, COLS a multiple of 32, and positive counts\n");
        return 2;
    }
    const size_t nb = (size_t)cols / ML_QK, wq = (size_t)rows * (size_t)cols / (q4 ? 2 : 1);
    ml_qtensor *W = buf(sizeof *W * (size_t)copies);
    for (int c = 0; c < copies; c++) {
        ml_qtensor w = {.q = buf(wq), .dh = buf((size_t)rows * nb * 2), .rows = rows, .cols = cols,
                        .type = (uint8_t)(q4 ? ML_TYPE_Q4_0 : ML_TYPE_Q8_0), .stype = ML_TYPE_F16};
        for (size_t i = 0; i < wq; i++) w.q[i] = (int8_t)(q4 ? (int)(next() >> 24) : (int)(next() >> 24) % 255 - 127);
        for (size_t i = 0; i < (size_t)rows * nb; i++) w.dh[i] = (uint16_t)(0x1400 + (next() >> 24)); /* ~1e-3 */
        W[c] = w;
    }
    ml_qbatch X = {buf((size_t)n_tok * (size_t)cols), buf((size_t)n_tok * nb * 4), cols, n_tok};
    ml_qact x = {X.q, X.d, cols};
    float *Y = buf((size_t)rows * (size_t)n_tok * 4);
    for (size_t i = 0; i < (size_t)n_tok * (size_t)cols; i++) X.q[i] = (int8_t)((int)(next() >> 24) % 255 - 127);
    for (size_t i = 0; i < (size_t)n_tok * nb; i++) X.d[i] = (float)(next() >> 8) * 1e-8f;
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
    const double units = (double)copies * rows / 16 * (double)nb;
    printf("%s %dx%d x%d, %d tokens: matmul %.2f ns, matvec %.2f ns per 16 rows x 1 block; matmul / matvec %.2f"
           " (check %g)\n",
           argv[1], rows, cols, copies, n_tok, mm / units * 1e9, mv / units * 1e9, mm / mv, (double)Y[0]);
    return 0;
}
