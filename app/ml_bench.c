/* ml_bench: kernel and model-decode speed of this build (DESIGN §7); the
 * command line. The figures come from app/bench_kernels.c and
 * app/bench_model.c; every one is the median of --reps runs, with min and
 * max (app/bench.h lists the parts). */
#include <stdio.h>
#include <string.h>

#include "app/bench.h"
#include "app/bench_shapes.h"
#include "app/cli.h"
#include "app/exit_codes.h"
#include "config/ml_config.h"
#include "core/quant.h"
#include "core/tune.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: ml_bench [options]\n"
            "  --shape NAME     stories15M | stories110M | tinyllama | smollm2-135m | qwen2.5-0.5b |\n"
            "                   qwen3-0.6b | llama3.2-1b | all (default stories15M):\n"
            "                   random weights built in memory at that model's shape\n"
            "  -m FILE          benchmark this .mlb instead (loaded as ml_run loads it)\n"
            "  --wtype T        q8_0 | q4_0 | both (default both)\n"
            "  -t LIST          thread counts, e.g. 1,2 (default 1; >1 not in THREADS=1 builds)\n"
            "  --tokens N       tokens decoded per run from position 0 (default 128): tg128\n"
            "  -d D             decode after a context of D tokens (a D-token prompt, not timed;\n"
            "                   default 0), as llama-batched-bench -npp D -ntg N -npl 1 (S_TG)\n"
            "  -p N             prompt tokens per run from position 0, in batches (default 128):\n"
            "                   pp128, as llama-bench -p 128; then the cost of verifying k = 2, 4, 8\n"
            "                   tokens in one batch over the decode's positions; 0 = neither figure\n"
            "  -b N             prompt tokens per batch (default %d, as ml_run; 1 = token by token)\n"
            "  --reps N         runs per figure, median reported (default 5)\n"
            "  --kernels-only / --model-only\n"
            "  --no-mmap        with -m: read the file into memory (default: when it takes at\n"
            "                   most half of the available memory; else mapped)\n"
            "  --mmap           with -m: map the file\n"
            "  --f16-scales     random weights with fp16 block scales (.mlb version 2, stype 1)\n"
            "  --prefetch P     the avx512vnni matvec's streaming: l1 (Zen 5's: prefetch into\n"
            "                   L1, Q8_0 in row runs) | l2 (prefetch into L2) | hw (Zen 4's: Q8_0\n"
            "                   read into memory left to the hardware prefetchers, Q4_0 into L1)\n"
            "                   | auto (default: l1 on AMD family 26 and later, hw on family\n"
            "                   25, else l2); the same results either way\n"
            "  --bw             after each model figure, the memory read bandwidth with as\n"
            "                   many threads (1 GiB buffer) and the figure's share of it\n"
            "  --rows           also print a '#row KIND ISA NAME VALUE' line per figure,\n"
            "                   for scripts (tools/bench_all.sh, tools/bench_vs_llamacpp.py)\n"
            "  --version        print the version and the build, and exit\n"
            "build: %s\n",
            ML_RUN_DEFAULT_BATCH, ML_ISA_NAME);
}

static int bad(const char *what, const char *v) {
    fprintf(stderr, "ml_bench: %s, got '%s'\n\n", what, v);
    usage(stderr);
    return ML_EXIT_USAGE;
}

static int parse(int argc, char **argv, ml_bench_opts *o) {
    *o = (ml_bench_opts){.shape = "stories15M", .wtypes = {ML_TYPE_Q8_0, ML_TYPE_Q4_0}, .n_wtypes = 2,
                   .threads = {1}, .n_threads = 1, .tokens = 128, .reps = 5, .kernels = 1, .model = 1,
                   .use_mmap = ML_FILE_AUTO, .prompt = 128, .batch = ML_RUN_DEFAULT_BATCH};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return ML_EXIT_OK; }
        if (!strcmp(a, "--kernels-only")) { o->model = 0; continue; }
        if (!strcmp(a, "--model-only")) { o->kernels = 0; continue; }
        if (!strcmp(a, "--no-mmap")) { o->use_mmap = 0; continue; }
        if (!strcmp(a, "--mmap")) { o->use_mmap = 1; continue; }
        if (!strcmp(a, "--bw")) { o->bw = 1; continue; }
        if (!strcmp(a, "--rows")) { o->rows = 1; continue; }
        if (!strcmp(a, "--f16-scales")) { o->f16_scales = 1; continue; }
        static const char *const valued[] = {"--shape", "-m",  "--wtype", "-t", "--tokens",
                                             "--reps",  "-p",  "-b",      "-d", "--prefetch"};
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof *valued; k++) known |= !strcmp(a, valued[k]);
        if (!known) return bad("unknown option", a);
        if (i + 1 >= argc) return bad("option needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--shape")) {
            int ok = !strcmp(v, "all");
            for (int k = 0; k < ML_BENCH_N_SHAPES; k++) ok |= !strcmp(v, ml_bench_shapes[k].name);
            if (!ok) return bad("--shape: expected stories15M, stories110M, tinyllama, smollm2-135m, qwen2.5-0.5b,"
                              " qwen3-0.6b, llama3.2-1b or all", v);
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
        } else if (!strcmp(a, "-p")) {
            if (!ml_cli_int(v, 0, 1 << 20, &n)) return bad("-p: expected a prompt length >= 0", v);
            o->prompt = (int)n;
        } else if (!strcmp(a, "-d")) {
            if (!ml_cli_int(v, 0, 1 << 20, &n)) return bad("-d: expected a context length >= 0", v);
            o->depth = (int)n;
        } else if (!strcmp(a, "-b")) {
            if (!ml_cli_int(v, 1, ML_CLI_MAX_BATCH, &n)) return bad("-b: expected a prompt batch size >= 1", v);
            o->batch = (int)n;
        } else if (!strcmp(a, "--prefetch")) {
            if (!strcmp(v, "l1")) ml_set_stream(ML_STREAM_L1);
            else if (!strcmp(v, "l2")) ml_set_stream(ML_STREAM_L2);
            else if (!strcmp(v, "hw")) ml_set_stream(ML_STREAM_HW);
            else if (strcmp(v, "auto")) return bad("--prefetch: expected l1, l2, hw or auto", v);
        } else if (!strcmp(a, "--reps")) {
            if (!ml_cli_int(v, 1, 64, &n)) return bad("--reps: expected 1..64", v);
            o->reps = (int)n;
        }
    }
    /* Options that leave nothing to measure are refused, not run as nothing. */
    const char *none = !o->kernels && !o->model ? "--kernels-only and --model-only together leave nothing to measure"
                       : !o->model && o->model_path ? "-m FILE measures a model, --kernels-only the kernels alone"
                                                    : NULL;
    if (none) {
        fprintf(stderr, "ml_bench: %s\n\n", none);
        usage(stderr);
        return ML_EXIT_USAGE;
    }
    return -1;
}

int ml_main(int argc, char **argv) {
    ml_bench_opts o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    rc = ML_EXIT_OK;
    ml_rng rng = {0x243F6A8885A308D3ull};
    static const char *const stream[] = {[ML_STREAM_L2] = "", [ML_STREAM_L1] = ", Zen 5 streaming (--prefetch l1)",
                                          [ML_STREAM_HW] = ", Zen 4 streaming (--prefetch hw)"};
    printf("ml_bench: %s build, median of %d runs%s\n", ML_ISA_NAME, o.reps,
           !strcmp(ML_ISA_NAME, "avx512vnni") ? stream[ml_stream()] : "");
    if (o.kernels && !o.model_path) {
        printf("kernels (single thread):\n");
        for (int w = 0; w < o.n_wtypes && !rc; w++) rc = ml_bench_matvecs(&o, o.wtypes[w], &rng);
        if (!rc) rc = ml_bench_vectors(&o, &rng);
        if (rc) return rc;
    }
    if (!o.model) return ML_EXIT_OK;
    printf("model decode, %d tokens from position %d", o.tokens, o.depth);
    if (o.prompt) printf("; prompt (pp), %d tokens from position 0 in batches of %d", o.prompt, o.batch);
    printf(":\n");
    ml_bench_bw bw = {NULL};
    if (o.bw) ml_bench_bw_init(&bw); /* without the buffer, each figure says so */
    rc = ml_bench_models(&o, &bw, &rng);
    ml_bench_bw_free(&bw);
    return rc;
}
