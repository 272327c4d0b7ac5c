/* ml_bench: kernel and model-decode speed of this build (DESIGN §7).
 *   kernels: matvec GB/s and GOPS at the matrix shapes of real models, and
 *            the float kernels at model widths;
 *   model:   decode tok/s, ms/token, effective GB/s of weights streamed and
 *            resident memory, per thread count, for a .mlb (-m) or for random
 *            weights built in memory at a named shape (--shape).
 * Every figure is the median of --reps runs, with min and max. Lines starting
 * with "#row" are for tools/bench_all.sh, which sets builds side by side. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/bench_shapes.h"
#include "app/cli.h"
#include "app/exit_codes.h"
#include "config/ml_config.h"
#include "core/threads.h"
#include "model/mlb.h"
#include "model/model.h"
#include "model/sampler.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

typedef struct {
    const char *model_path, *shape;  /* shape: a name or "all" */
    int wtypes[2], n_wtypes;
    int threads[8], n_threads;
    int tokens, reps, kernels, model, use_mmap, bw;
} options;

/* ---- statistics ---------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct { double med, lo, hi; } stats;

static stats summarize(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    stats s = {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v[0], v[n - 1]};
    return s;
}

/* ---- random data --------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Quants of the format's range (Q8 never -128: the SIMD kernels' contract). */
static void fill_quants(int8_t *q, size_t n, int wtype, uint64_t *rng) {
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = rng_next(rng);
        for (size_t j = 0; j < 8 && i + j < n; j++) {
            uint8_t b = (uint8_t)(r >> (8 * j));
            q[i + j] = (int8_t)(wtype == ML_TYPE_Q8_0 && b == 0x80 ? 0x81 : b);
        }
    }
}

static void fill_floats(float *v, size_t n, float lo, float hi, uint64_t *rng) {
    for (size_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * (float)(rng_next(rng) >> 40) / 16777216.0f;
}

/* One 64-byte-aligned (2 MiB-aligned when large, for huge pages) buffer. */
static void *big_alloc(size_t n) {
    size_t align = n >= (2u << 20) ? (2u << 20) : 64;
    void *p = aligned_alloc(align, (n + align - 1) / align * align);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p && align > 64) madvise(p, (n + align - 1) / align * align, MADV_HUGEPAGE);
#endif
    return p;
}

/* ---- kernels ------------------------------------------------------------- */

typedef struct { const char *model; int rows, cols; const char *what; } mv_shape;

static const mv_shape mv_shapes[] = {
    {"stories15M", 288, 288, "wq/wo"},  {"stories15M", 768, 288, "w1/w3"},
    {"stories15M", 288, 768, "w2"},     {"stories15M", 32000, 288, "classifier"},
    {"stories110M", 768, 768, "wq/wo"}, {"stories110M", 2048, 768, "w1/w3"},
    {"stories110M", 768, 2048, "w2"},   {"stories110M", 32000, 768, "classifier"},
    {"tinyllama", 2048, 2048, "wq/wo"}, {"tinyllama", 256, 2048, "wk/wv"},
    {"tinyllama", 5632, 2048, "w1/w3"}, {"tinyllama", 2048, 5632, "w2"},
    {"tinyllama", 32000, 2048, "classifier"},
};

/* Seconds per call of fn, timed over enough calls to last ~50 ms. */
typedef void (*bench_fn)(void *ctx);
static double time_call(bench_fn fn, void *ctx) {
    int calls = 1;
    for (;;) {
        double t0 = ml_cli_now();
        for (int i = 0; i < calls; i++) fn(ctx);
        double dt = ml_cli_now() - t0;
        if (dt > 0.05 || calls > (1 << 24)) return dt / calls;
        calls *= dt > 0.005 ? 4 : 16;
    }
}

typedef struct { float *y; ml_qtensor W; ml_qact x; } mv_ctx;
static void run_matvec(void *c) {
    mv_ctx *m = c;
    if (m->W.type == ML_TYPE_Q8_0)
        ml_k_matvec_q8(m->y, &m->W, &m->x, 0, m->W.rows);
    else
        ml_k_matvec_q4(m->y, &m->W, &m->x, 0, m->W.rows);
}

static void bench_matvec(const options *o, int wtype, uint64_t *rng) {
    const char *tn = wtype == ML_TYPE_Q8_0 ? "q8_0" : "q4_0";
    for (size_t i = 0; i < sizeof mv_shapes / sizeof *mv_shapes; i++) {
        const mv_shape *s = &mv_shapes[i];
        if (strcmp(o->shape, "all") && strcmp(o->shape, s->model)) continue;
        size_t n = (size_t)s->rows * s->cols, qb = (size_t)ml_quant_bytes(wtype, n), db = n / ML_QK * 4;
        mv_ctx c = {
            .y = big_alloc((size_t)s->rows * 4),
            .W = {.q = big_alloc(qb), .d = big_alloc(db), .rows = s->rows, .cols = s->cols, .type = (uint8_t)wtype},
            .x = {.q = big_alloc((size_t)s->cols), .d = big_alloc((size_t)s->cols / ML_QK * 4), .n = s->cols},
        };
        if (!c.y || !c.W.q || !c.W.d || !c.x.q || !c.x.d) {
            fprintf(stderr, "ml_bench: out of memory for %dx%d\n", s->rows, s->cols);
            exit(ML_EXIT_FAIL);
        }
        fill_quants(c.W.q, qb, wtype, rng);
        fill_floats(c.W.d, n / ML_QK, 1e-3f, 2e-3f, rng);
        fill_quants(c.x.q, (size_t)s->cols, ML_TYPE_Q8_0, rng);
        fill_floats(c.x.d, (size_t)s->cols / ML_QK, 1e-2f, 2e-2f, rng);
        double t[64];
        for (int r = 0; r < o->reps; r++) t[r] = time_call(run_matvec, &c);
        stats st = summarize(t, o->reps);
        double bytes = (double)(qb + db);
        printf("  matvec_%s %-11s %-10s %5dx%-5d %8.2f us  %7.1f GB/s  %7.1f GOPS  (%.1f-%.1f GB/s)\n", tn,
               s->model, s->what, s->rows, s->cols, st.med * 1e6, bytes / st.med / 1e9,
               2.0 * (double)n / st.med / 1e9, bytes / st.hi / 1e9, bytes / st.lo / 1e9);
        printf("#row kernel %s matvec_%s_%dx%d %.3f\n", ML_ISA_NAME, tn, s->rows, s->cols, bytes / st.med / 1e9);
        free(c.y), free(c.W.q), free(c.W.d), free(c.x.q), free(c.x.d);
    }
}

typedef struct { float *a, *b, *c; ml_qact qa; int n; int which; } vec_ctx;
static void run_vec(void *p) {
    vec_ctx *v = p;
    switch (v->which) {
    case 0: ml_k_quantize_q8(&v->qa, v->a, v->n); break;
    case 1: ml_k_rmsnorm(v->c, v->a, v->b, v->n, 1e-5f); break;
    case 2: memcpy(v->c, v->a, (size_t)v->n * 4); ml_k_softmax(v->c, v->n); break;
    case 3: memcpy(v->c, v->a, (size_t)v->n * 4); ml_k_silu_mul(v->c, v->b, v->n); break;
    case 4: v->c[0] += ml_k_dot_f32(v->a, v->b, v->n); break;
    case 5: ml_k_axpy_f32(v->c, 0.5f, v->a, v->n); break;
    }
}

static void bench_vectors(const options *o, uint64_t *rng) {
    static const char *names[] = {"quantize_q8", "rmsnorm", "softmax", "silu_mul", "dot_f32", "axpy_f32"};
    static const int sizes[] = {288, 2048, 5632, 32000};
    for (int w = 0; w < 6; w++)
        for (int k = 0; k < 4; k++) {
            int n = sizes[k];
            if ((w == 0 || w == 1 || w == 3) && n == 32000) continue; /* not a width these run at */
            vec_ctx v = {big_alloc((size_t)n * 4), big_alloc((size_t)n * 4), big_alloc((size_t)n * 4),
                         {big_alloc((size_t)n), big_alloc((size_t)n / ML_QK * 4), n}, n, w};
            fill_floats(v.a, (size_t)n, -4.0f, 4.0f, rng);
            fill_floats(v.b, (size_t)n, -1.0f, 1.0f, rng);
            fill_floats(v.c, (size_t)n, -1.0f, 1.0f, rng);
            double t[64];
            for (int r = 0; r < o->reps; r++) t[r] = time_call(run_vec, &v);
            stats st = summarize(t, o->reps);
            printf("  %-12s n=%-6d %9.3f us  %7.2f Gelem/s\n", names[w], n, st.med * 1e6, n / st.med / 1e9);
            free(v.a), free(v.b), free(v.c), free(v.qa.q), free(v.qa.d);
        }
}

/* ---- read bandwidth ------------------------------------------------------ */

/* The bound of a model that does not fit in cache: nth threads each read
 * their slice of a buffer far larger than any cache, one 8-byte word per
 * 64-byte line. Every line still crosses the memory bus whole, and the loop
 * does almost nothing else, so the figure is the memory system's, the same
 * for every ISA build. Measured next to each model figure (--bw), so the
 * ratio of the two comes from one run on a shared, noisy machine. */
#define BW_BYTES ((size_t)1 << 30)

typedef struct { const uint64_t *buf; size_t lines; uint64_t sink[256]; } bw_task;

static void bw_run(void *ctx, int ith, int nth) {
    bw_task *t = ctx;
    size_t l0 = t->lines * (size_t)ith / (size_t)nth, l1 = t->lines * (size_t)(ith + 1) / (size_t)nth;
    uint64_t a = 0, b = 0, c = 0, d = 0; /* 4 chains: the loads never wait on an add */
    size_t l = l0;
    for (; l + 4 <= l1; l += 4) a += t->buf[8 * l], b += t->buf[8 * l + 8], c += t->buf[8 * l + 16], d += t->buf[8 * l + 24];
    for (; l < l1; l++) a += t->buf[8 * l];
    t->sink[ith] = a + b + c + d;
}

static uint64_t *bw_buf; /* BW_BYTES, allocated by ml_main with --bw */

/* The best GB/s of reps passes over the buffer with nth threads, after one
 * warm-up pass (the bound is what the memory can deliver; the median goes
 * to *med); 0 if the buffer or the pool cannot be had. */
static double read_bandwidth(const options *o, int nth, double *med) {
    ml_pool *pool;
    ml_err err;
    if (!bw_buf || ml_pool_create(&pool, nth, &err)) return 0;
    bw_task t = {bw_buf, BW_BYTES / 64, {0}};
    double v[64];
    ml_pool_run(pool, bw_run, &t);
    for (int r = 0; r < o->reps; r++) {
        double t0 = ml_cli_now();
        ml_pool_run(pool, bw_run, &t);
        v[r] = (double)BW_BYTES / (ml_cli_now() - t0) / 1e9;
    }
    ml_pool_destroy(pool);
    stats st = summarize(v, o->reps);
    *med = st.med;
    return st.hi;
}

/* ---- model decode ---------------------------------------------------------- */

/* Bytes of a .mlb of this shape, and its image in memory with random weights. */
typedef struct { unsigned char *data; size_t size; } image;

static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

static image build_image(const ml_bench_shape *s, int wtype, uint64_t *rng) {
    ml_mlb_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, ML_MLB_MAGIC, 4);
    h.version = ML_MLB_VERSION;
    h.dim = (uint32_t)s->dim, h.n_layers = (uint32_t)s->n_layers, h.n_heads = (uint32_t)s->n_heads;
    h.n_kv_heads = (uint32_t)s->n_kv_heads, h.hidden_dim = (uint32_t)s->hidden_dim;
    h.vocab = (uint32_t)s->vocab, h.max_seq = (uint32_t)s->max_seq;
    h.rope_theta = 10000.0f, h.norm_eps = 1e-5f, h.wtype = (uint32_t)wtype;
    h.shared_classifier = (uint32_t)s->shared_classifier;
    int kv = s->n_kv_heads * (s->dim / s->n_heads);
    /* The array order of model/mlb.h: (rows, cols) per matrix, 0 rows = a norm. */
    int mats[9][2] = {{0, 0}, {s->dim, s->dim}, {kv, s->dim}, {kv, s->dim}, {s->dim, s->dim},
                      {0, 0}, {s->hidden_dim, s->dim}, {s->dim, s->hidden_dim}, {s->hidden_dim, s->dim}};
    /* Two passes: measure, then fill. */
    image img = {0};
    for (int pass = 0; pass < 2; pass++) {
        size_t off = sizeof h;
        unsigned char *base = img.data;
#define ARRAY(bytes, fill)                                   \
    do {                                                     \
        off = align64(off);                                  \
        if (base) { fill; }                                  \
        off += (bytes);                                      \
    } while (0)
#define MATRIX(r, c)                                                                          \
    do {                                                                                      \
        size_t n_ = (size_t)(r) * (size_t)(c), qb_ = (size_t)ml_quant_bytes(wtype, n_);        \
        ARRAY(qb_, fill_quants((int8_t *)(base + off), qb_, wtype, rng));                     \
        ARRAY(n_ / ML_QK * 4, fill_floats((float *)(base + off), n_ / ML_QK, 0.5f / 127.0f / sqrtf((float)(c)), 1.5f / 127.0f / sqrtf((float)(c)), rng)); \
    } while (0)
#define NORM(n) ARRAY((size_t)(n) * 4, for (int i_ = 0; i_ < (n); i_++) ((float *)(base + off))[i_] = 1.0f)
        MATRIX(s->vocab, s->dim);
        for (int l = 0; l < s->n_layers; l++)
            for (int k = 0; k < 9; k++) {
                if (mats[k][0] == 0) NORM(s->dim);
                else MATRIX(mats[k][0], mats[k][1]);
            }
        NORM(s->dim);
        if (!s->shared_classifier) MATRIX(s->vocab, s->dim);
#undef ARRAY
#undef MATRIX
#undef NORM
        if (pass == 0) {
            img.size = off;
            img.data = big_alloc(off);
            if (!img.data) return img;
            memcpy(img.data, &h, sizeof h);
        }
    }
    return img;
}

static long resident_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1) break;
    fclose(f);
    return kib;
}

/* Greedy decode of o->tokens tokens from position 0 (llama-bench's tg). */
static double decode_seconds(ml_model *m, int tokens) {
    int token = 1;
    ml_err err;
    double t0 = ml_cli_now();
    for (int pos = 0; pos < tokens; pos++) {
        if (ml_forward(m, token, pos, &err)) return -1;
        token = ml_argmax(m->s.logits, m->cfg.vocab);
    }
    return ml_cli_now() - t0;
}

static int bench_model(const options *o, const char *label, const void *data, size_t size, int nth) {
    ml_model m;
    ml_err err = {{0}};
    ml_open_opts oo = {.use_mmap = o->use_mmap, .n_threads = nth};
    ml_status s = data ? ml_model_open_buffer(&m, data, size, label, &oo, &err)
                       : ml_model_open(&m, o->model_path, &oo, &err);
    if (s) {
        fprintf(stderr, "ml_bench: %s: %s (%s)\n", label, err.msg, ml_status_name(s));
        return ML_EXIT_FAIL;
    }
    int tokens = o->tokens < m.cfg.max_seq ? o->tokens : m.cfg.max_seq;
    /* Bytes of weights one token streams: every matrix once, plus one embedding row. */
    double per_tok = (double)m.weight_bytes - (m.cfg.shared_classifier ? 0.0 : (double)(
        ml_quant_bytes(m.cfg.wtype, (uint64_t)m.cfg.vocab * m.cfg.dim) + (uint64_t)m.cfg.vocab * m.cfg.dim / ML_QK * 4));
    decode_seconds(&m, tokens < 8 ? tokens : 8); /* warm caches and page in */
    double t[64];
    for (int r = 0; r < o->reps; r++) t[r] = decode_seconds(&m, tokens);
    stats st = summarize(t, o->reps);
    double tps = tokens / st.med;
    const char *tn = m.cfg.wtype == ML_TYPE_Q8_0 ? "q8_0" : "q4_0";
    printf("  %-12s %s  %dT  %8.1f tok/s  %7.3f ms/token  %6.1f GB/s  RSS %6.1f MiB  (%.1f-%.1f tok/s; weights %s)\n",
           label, tn, nth, tps, 1e3 / tps, per_tok * tps / 1e9, resident_kib() / 1024.0,
           tokens / st.hi, tokens / st.lo, ml_file_kind_name(m.file.kind));
    if (o->bw) {
        double med, bw = read_bandwidth(o, nth, &med);
        if (bw > 0)
            printf("  %-12s %s  %dT  %5.1f%% of the read bandwidth measured next: %.1f GB/s (median %.1f)\n", label,
                   tn, nth, 100.0 * per_tok * tps / 1e9 / bw, bw, med);
        else
            printf("  %-12s read bandwidth not measured: no memory for its 1 GiB buffer\n", label);
    }
    printf("#row model %s %s_%s_%dT %.2f\n", ML_ISA_NAME, label, tn, nth, tps);
    fflush(stdout);
    ml_model_close(&m);
    return ML_EXIT_OK;
}

/* ---- command line -------------------------------------------------------- */

static void usage(FILE *f) {
    fprintf(f,
            "usage: ml_bench [options]\n"
            "  --shape NAME     stories15M | stories110M | tinyllama | all (default stories15M):\n"
            "                   random weights built in memory at that model's shape\n"
            "  -m FILE          benchmark this .mlb instead (weights mapped, or --no-mmap)\n"
            "  --wtype T        q8_0 | q4_0 | both (default both)\n"
            "  -t LIST          thread counts, e.g. 1,2 (default 1; >1 needs THREADS=pthread)\n"
            "  --tokens N       tokens decoded per run from position 0 (default 128)\n"
            "  --reps N         runs per figure, median reported (default 5)\n"
            "  --kernels-only / --model-only\n"
            "  --no-mmap        with -m: read the file into memory\n"
            "  --bw             after each model figure, the memory read bandwidth with as\n"
            "                   many threads (1 GiB buffer) and the figure's share of it\n"
            "build: %s\n",
            ML_ISA_NAME);
}

static int bad(const char *what, const char *v) {
    fprintf(stderr, "ml_bench: %s, got '%s'\n\n", what, v);
    usage(stderr);
    return ML_EXIT_USAGE;
}

static int parse(int argc, char **argv, options *o) {
    *o = (options){.shape = "stories15M", .wtypes = {ML_TYPE_Q8_0, ML_TYPE_Q4_0}, .n_wtypes = 2,
                   .threads = {1}, .n_threads = 1, .tokens = 128, .reps = 5, .kernels = 1, .model = 1,
                   .use_mmap = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return ML_EXIT_OK; }
        if (!strcmp(a, "--kernels-only")) { o->model = 0; continue; }
        if (!strcmp(a, "--model-only")) { o->kernels = 0; continue; }
        if (!strcmp(a, "--no-mmap")) { o->use_mmap = 0; continue; }
        if (!strcmp(a, "--bw")) { o->bw = 1; continue; }
        static const char *const valued[] = {"--shape", "-m", "--wtype", "-t", "--tokens", "--reps"};
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof *valued; k++) known |= !strcmp(a, valued[k]);
        if (!known) return bad("unknown option", a);
        if (i + 1 >= argc) return bad("option needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--shape")) {
            int ok = !strcmp(v, "all");
            for (int k = 0; k < ML_BENCH_N_SHAPES; k++) ok |= !strcmp(v, ml_bench_shapes[k].name);
            if (!ok) return bad("--shape: expected stories15M, stories110M, tinyllama or all", v);
            o->shape = v;
        } else if (!strcmp(a, "-m")) {
            o->model_path = v;
        } else if (!strcmp(a, "--wtype")) {
            if (!strcmp(v, "q8_0")) o->wtypes[0] = ML_TYPE_Q8_0, o->n_wtypes = 1;
            else if (!strcmp(v, "q4_0")) o->wtypes[0] = ML_TYPE_Q4_0, o->n_wtypes = 1;
            else if (strcmp(v, "both")) return bad("--wtype: expected q8_0, q4_0 or both", v);
        } else if (!strcmp(a, "-t")) {
            char buf[128];
            snprintf(buf, sizeof buf, "%s", v);
            o->n_threads = 0;
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                if (o->n_threads == 8 || !ml_cli_int(tok, 1, 256, &n)) return bad("-t: expected a list like 1,2", v);
                o->threads[o->n_threads++] = (int)n;
            }
            if (!o->n_threads) return bad("-t: expected a list like 1,2", v);
        } else if (!strcmp(a, "--tokens")) {
            if (!ml_cli_int(v, 1, 1 << 20, &n)) return bad("--tokens: expected a count >= 1", v);
            o->tokens = (int)n;
        } else if (!strcmp(a, "--reps")) {
            if (!ml_cli_int(v, 1, 64, &n)) return bad("--reps: expected 1..64", v);
            o->reps = (int)n;
        }
    }
    return -1;
}

/* Every selected model at every thread count. */
static int run_models(const options *o, uint64_t *rng) {
    int rc;
    if (o->model_path) {
        for (int t = 0; t < o->n_threads; t++)
            if ((rc = bench_model(o, o->model_path, NULL, 0, o->threads[t]))) return rc;
        return ML_EXIT_OK;
    }
    for (int k = 0; k < ML_BENCH_N_SHAPES; k++) {
        const ml_bench_shape *s = &ml_bench_shapes[k];
        if (strcmp(o->shape, "all") && strcmp(o->shape, s->name)) continue;
        for (int w = 0; w < o->n_wtypes; w++) {
            image img = build_image(s, o->wtypes[w], rng);
            if (!img.data) {
                fprintf(stderr, "ml_bench: out of memory building %s\n", s->name);
                return ML_EXIT_FAIL;
            }
            rc = ML_EXIT_OK;
            for (int t = 0; t < o->n_threads && !rc; t++) rc = bench_model(o, s->name, img.data, img.size, o->threads[t]);
            free(img.data);
            if (rc) return rc;
        }
    }
    return ML_EXIT_OK;
}

int ml_main(int argc, char **argv) {
    options o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    uint64_t rng = 0x243F6A8885A308D3ull;
    printf("ml_bench: %s build, median of %d runs\n", ML_ISA_NAME, o.reps);
    if (o.kernels && !o.model_path) {
        printf("kernels (single thread):\n");
        for (int w = 0; w < o.n_wtypes; w++) bench_matvec(&o, o.wtypes[w], &rng);
        bench_vectors(&o, &rng);
    }
    if (!o.model) return ML_EXIT_OK;
    printf("model decode, %d tokens from position 0:\n", o.tokens);
    if (o.bw && (bw_buf = big_alloc(BW_BYTES)) != NULL) memset(bw_buf, 1, BW_BYTES); /* pages in before timing */
    rc = run_models(&o, &rng);
    free(bw_buf);
    return rc;
}
