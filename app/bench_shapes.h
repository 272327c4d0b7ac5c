/* The named model shapes ml_bench builds in memory (random weights): the
 * shapes of the speed anchors in ../shared/PERF.md. */
#ifndef ML_BENCH_SHAPES_H
#define ML_BENCH_SHAPES_H

typedef struct {
    const char *name;
    int dim, n_layers, n_heads, n_kv_heads, hidden_dim, vocab, max_seq, shared_classifier;
} ml_bench_shape;

static const ml_bench_shape ml_bench_shapes[] = {
    {"stories15M", 288, 6, 6, 6, 768, 32000, 256, 1},
    {"stories110M", 768, 12, 12, 12, 2048, 32000, 1024, 1},
    {"tinyllama", 2048, 22, 32, 4, 5632, 32000, 2048, 0},
};
#define ML_BENCH_N_SHAPES (int)(sizeof ml_bench_shapes / sizeof *ml_bench_shapes)

#endif
