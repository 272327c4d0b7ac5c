/* The .mlb loader refuses every malformed file with the right ml_status and
 * a message that names the field (DESIGN §6 "Loader validates ...").
 *
 * test_loader --layout dim n_layers n_heads n_kv_heads hidden_dim vocab
 *   max_seq wtype shared_classifier  prints the arrays of that header as the
 * tensor table lays them out (model/mlb.h), one "name layer q|d|f offset
 * bytes" line each, then "end <file bytes>": tests/test_mlb_layout.py
 * compares it with tools/mlb.py. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/mlb_random.h"
#include "model/model.h"
#include "tests/testlib.h"

static char path[64];

static ml_status open_file(ml_err *err) {
    ml_model m;
    ml_open_opts oo = {.use_mmap = 1, .n_threads = 1};
    ml_status s = ml_model_open(&m, path, &oo, err);
    if (s == ML_OK) ml_model_close(&m);
    return s;
}

/* A valid small model, written to `path`; returns its size. */
static uint64_t write_valid(uint32_t wtype, uint32_t shared) {
    ml_mlb_header h = ml_mlb_make_header(64, 2, 4, 2, 96, 64, 32, wtype, shared);
    ml_err err;
    CHECK(ml_mlb_random_write(path, &h, 1, &err) == ML_OK, "write the model: %s", err.msg);
    return ml_mlb_random_bytes(&h);
}

static void expect(ml_status want, const char *field, const char *what) {
    ml_err err = {{0}};
    ml_status s = open_file(&err);
    CHECK(s == want && strstr(err.msg, field), "%s: expected %s naming '%s', got %s: %s", what,
          ml_status_name(want), field, ml_status_name(s), err.msg);
}

/* Overwrite `n` bytes at `off` of the file. */
static void poke(long off, const void *v, size_t n) {
    FILE *f = fopen(path, "r+b");
    fseek(f, off, SEEK_SET);
    fwrite(v, 1, n, f);
    fclose(f);
}

static void header_case(const char *field, long off, uint32_t value, ml_status want) {
    write_valid(ML_TYPE_Q8_0, 1);
    poke(off, &value, 4);
    char what[96];
    snprintf(what, sizeof what, "%s = %u", field, value);
    expect(want, field, what);
}

static int print_layout(char **arg) {
    uint32_t v[9];
    for (int i = 0; i < 9; i++) v[i] = (uint32_t)strtoul(arg[i], NULL, 10);
    ml_mlb_header h = ml_mlb_make_header(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]);
    ml_mlb_walk w;
    ml_mlb_array a;
    ml_mlb_walk_init(&w, &h);
    while (ml_mlb_walk_next(&w, &a))
        printf("%s %d %c %llu %llu\n", a.t->name, a.layer, "qdf"[a.part], (unsigned long long)a.off,
               (unsigned long long)a.bytes);
    printf("end %llu\n", (unsigned long long)w.end);
    return 0;
}

int ml_main(int argc, char **argv) {
    if (argc == 11 && !strcmp(argv[1], "--layout")) return print_layout(argv + 2);
    strcpy(path, "/tmp/ml_loader_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) {
        CHECK(0, "mkstemp");
        return tl_summary();
    }
    close(fd);

    /* ---- valid files open, in both weight types, shared or not ---- */
    int f0 = tl_failed;
    for (int wt = 0; wt < 2; wt++)
        for (uint32_t sh = 0; sh < 2; sh++) {
            uint32_t wtype = wt ? ML_TYPE_Q4_0 : ML_TYPE_Q8_0;
            uint64_t n = write_valid(wtype, sh);
            expect(ML_OK, "", "valid model");
            /* the writer's file and buffer forms are the same bytes */
            ml_mlb_header h = ml_mlb_make_header(64, 2, 4, 2, 96, 64, 32, wtype, sh);
            unsigned char *img = malloc(n), *file = malloc(n + 1);
            ml_mlb_random_fill(img, &h, 1);
            FILE *f = fopen(path, "rb");
            size_t got = f ? fread(file, 1, n + 1, f) : 0;
            if (f) fclose(f);
            CHECK(got == n && !memcmp(img, file, n), "wtype %u shared %u: ml_mlb_random_write wrote %zu bytes, "
                  "not the %llu of ml_mlb_random_fill", wtype, sh, got, (unsigned long long)n);
            free(img), free(file);
        }
    GROUP_DONE("valid models open; the .mlb writer's file equals its buffer", f0);

    /* ---- the arena: the counting pass and the carving pass agree ---- */
    f0 = tl_failed;
    write_valid(ML_TYPE_Q8_0, 0);
    static const int batches[][2] = {{0, 0}, {1, 0}, {8, 0}, {8, 1}, {1000, 1}};
    for (size_t i = 0; i < sizeof batches / sizeof *batches; i++) {
        ml_model m;
        ml_err err = {{0}};
        ml_open_opts oo = {.use_mmap = 1, .n_threads = 1, .batch = batches[i][0], .all_logits = batches[i][1]};
        ml_status s = ml_model_open(&m, path, &oo, &err);
        CHECK(s == ML_OK, "batch %d all_logits %d: %s", batches[i][0], batches[i][1], err.msg);
        if (s) continue;
        CHECK(m.arena.used == m.arena.cap && m.s.sampler_scratch && m.b.cap >= 1 && m.b.x_q8.d &&
                  (!batches[i][1] || m.b.logits),
              "batch %d all_logits %d: the arena holds %zu bytes, the buffers take %zu", batches[i][0],
              batches[i][1], m.arena.cap, m.arena.used);
        ml_model_close(&m);
    }
    GROUP_DONE("the arena is exactly the size of the buffers carved from it, with a batch of one and more", f0);

    /* ---- header fields ---- */
    f0 = tl_failed;
    header_case("magic", 0, 0x46554747u /* "GGUF" */, ML_E_FORMAT);
    header_case("version", 4, 3, ML_E_FORMAT); /* 1 and 2 load */
    header_case("dim", 8, 0, ML_E_SHAPE);
    header_case("dim", 8, 48, ML_E_SHAPE);           /* not a multiple of 32 */
    header_case("dim", 8, 0xFFFFFFFFu, ML_E_SHAPE);  /* a negative int32 */
    header_case("n_layers", 12, 0, ML_E_SHAPE);
    header_case("n_layers", 12, 0x80000000u, ML_E_SHAPE);
    header_case("n_heads", 16, 0, ML_E_SHAPE);
    header_case("n_heads", 16, 3, ML_E_SHAPE);       /* does not divide dim 64 */
    header_case("head_dim", 16, 64, ML_E_SHAPE);     /* head_dim 1 is odd */
    header_case("n_kv_heads", 20, 3, ML_E_SHAPE);    /* does not divide n_heads 4 */
    header_case("n_kv_heads", 20, 8, ML_E_SHAPE);    /* more than n_heads */
    header_case("hidden_dim", 24, 100, ML_E_SHAPE);  /* K not a multiple of 32 */
    header_case("hidden_dim", 24, 0xFFFFFFE0u, ML_E_SHAPE);
    header_case("vocab", 28, 0, ML_E_SHAPE);
    header_case("vocab", 28, 0xFFFFFFFFu, ML_E_SHAPE);
    header_case("max_seq", 32, 0, ML_E_SHAPE);
    header_case("max_seq", 32, 0xFFFFFFFFu, ML_E_SHAPE);
    header_case("wtype", 44, 5, ML_E_FORMAT);
    header_case("shared_classifier", 48, 2, ML_E_FORMAT);
    float nan_v = NAN, inf_v = INFINITY, zero = 0.0f;
    uint32_t u;
    memcpy(&u, &nan_v, 4);
    header_case("rope_theta", 36, u, ML_E_FORMAT);
    memcpy(&u, &zero, 4);
    header_case("rope_theta", 36, u, ML_E_FORMAT);
    memcpy(&u, &inf_v, 4);
    header_case("norm_eps", 40, u, ML_E_FORMAT);
    GROUP_DONE("header fields checked", f0);

    /* ---- truncation: in the header, in every region, and extra bytes ---- */
    f0 = tl_failed;
    uint64_t size = write_valid(ML_TYPE_Q8_0, 0);
    uint64_t cuts[] = {0, 3, 40, 255, 256, 300, size / 3, size / 2, size - 65, size - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        write_valid(ML_TYPE_Q8_0, 0);
        CHECK(truncate(path, (off_t)cuts[i]) == 0, "truncate");
        const char *field = cuts[i] == 0 ? "empty" : cuts[i] < 256 ? "header" : "truncated";
        expect(ML_E_FORMAT, field, "truncated file");
    }
    write_valid(ML_TYPE_Q8_0, 0);
    CHECK(truncate(path, (off_t)size + 10) == 0, "extend");
    expect(ML_E_FORMAT, "file size", "trailing bytes");
    GROUP_DONE("truncated and oversized files refused", f0);

    /* ---- values: non-finite scales and norm weights are refused ---- */
    f0 = tl_failed;
    write_valid(ML_TYPE_Q8_0, 1);
    /* tok_emb.q is 64*64 bytes at 256; tok_emb.d follows at the next 64 boundary. */
    poke(256 + 64 * 64 + 4 * 5, &nan_v, 4);
    expect(ML_E_FORMAT, "tok_emb", "NaN scale");
    write_valid(ML_TYPE_Q8_0, 1);
    long attn_norm = 256 + 64 * 64 + 64 * 2 * 4; /* after tok_emb.d (128 floats) */
    poke(attn_norm + 8, &inf_v, 4);
    expect(ML_E_FORMAT, "attn_norm", "Inf norm weight");
    GROUP_DONE("non-finite scales refused", f0);

    /* ---- missing file, directory ---- */
    f0 = tl_failed;
    char saved[64];
    strcpy(saved, path);
    strcpy(path, "/nonexistent/model.mlb");
    expect(ML_E_IO, "/nonexistent/model.mlb", "missing file");
    strcpy(path, "/tmp");
    expect(ML_E_IO, "not a regular file", "directory");
    strcpy(path, saved);
    GROUP_DONE("missing files refused", f0);

    /* ---- a context too large for memory: ML_E_NOMEM, not a crash ---- */
    f0 = tl_failed;
    {
        ml_mlb_header h = ml_mlb_make_header(32, 1024, 2, 2, 32, 32, 1u << 20, ML_TYPE_Q8_0, 1);
        ml_err werr;
        /* KV cache 2 * 1024 * 2^20 * 32 * 4 B = 256 GiB */
        CHECK(ml_mlb_random_write(path, &h, 3, &werr) == ML_OK, "write the model: %s", werr.msg);
        FILE *oc = fopen("/proc/sys/vm/overcommit_memory", "r");
        int mode = oc ? fgetc(oc) : '0';
        if (oc) fclose(oc);
        if (mode == '1') {
            SKIP("NOMEM: overcommit_memory=1 lets any allocation succeed");
        } else {
            expect(ML_E_NOMEM, "arena", "256 GiB KV cache");
        }
        /* -c caps the context and so the arena: the same file then opens. */
        ml_model m;
        ml_err err = {{0}};
        ml_open_opts oo = {.use_mmap = 1, .max_seq = 64, .n_threads = 1};
        ml_status s = ml_model_open(&m, path, &oo, &err);
        CHECK(s == ML_OK && m.cfg.max_seq == 64, "capped context: %s", err.msg);
        if (s == ML_OK) ml_model_close(&m);
    }
    GROUP_DONE("huge context gives ML_E_NOMEM; -c caps it", f0);

    unlink(path);
    return tl_summary();
}
