/* The named model shapes ml_bench builds in memory (random weights): the
 * shapes of the speed anchors in ../shared/PERF.md. */
#ifndef ML_BENCH_SHAPES_H
#define ML_BENCH_SHAPES_H

typedef struct {
    const char *name;
    int dim, n_layers, n_heads, n_kv_heads, hidden_dim, vocab, max_seq, shared_classifier;
    /* .mlb version 2 (0, 0, 0: a version-1 model): head_dim (0: dim/n_heads),
     * flags (ML_MLB_FLAG_*), llama3 (1: Llama 3.2's rope, theta 500000 and
     * scaling factor 32; else theta 10000) */
    int head_dim, flags, llama3;
} ml_bench_shape;

/* Today's models (issue 20) at their real shapes; the context is capped at
 * 2048 (the KV cache of the full 32k..128k would not fit the bench). */
static const ml_bench_shape ml_bench_shapes[] = {
    {"stories15M", 288, 6, 6, 6, 768, 32000, 256, 1, 0, 0, 0},
    {"stories110M", 768, 12, 12, 12, 2048, 32000, 1024, 1, 0, 0, 0},
    {"tinyllama", 2048, 22, 32, 4, 5632, 32000, 2048, 0, 0, 0, 0},
    {"smollm2-135m", 576, 30, 9, 3, 1536, 49152, 2048, 1, 0, 0, 0},
    {"qwen2.5-0.5b", 896, 24, 14, 2, 4864, 151936, 2048, 1, 0, 1, 0},
    {"qwen3-0.6b", 1024, 28, 16, 8, 3072, 151936, 2048, 1, 128, 2, 0},
    {"llama3.2-1b", 2048, 16, 32, 8, 8192, 128256, 2048, 1, 0, 0, 1},
};
#define ML_BENCH_N_SHAPES (int)(sizeof ml_bench_shapes / sizeof *ml_bench_shapes)

#endif
