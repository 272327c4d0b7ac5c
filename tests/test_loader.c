/* The .mlb loader refuses every malformed file with the right ml_status and
 * a message that names the field (DESIGN §6 "Loader validates ...").
 *
 * test_loader --layout dim n_layers n_heads n_kv_heads hidden_dim vocab
 *   max_seq wtype shared_classifier  prints the arrays of that header as the
 * tensor table lays them out (model/mlb.h), one "name layer q|d|f offset
 * bytes" line each, then "end <file bytes>": tests/test_mlb_layout.py
 * compares it with tools/mlb.py. */
/* madvise and MAP_ANONYMOUS, for the huge-page check: beyond POSIX. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE
#endif
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/mem.h"
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

#if defined(__linux__) && defined(MADV_HUGEPAGE)
/* Whether the mapping holding p carries the huge-page advice ("hg" among
 * its VmFlags in /proc/self/smaps): 1 or 0, -1 when smaps does not say. */
static int huge_advised(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[1024];
    int in = 0, said = -1;
    while (said < 0 && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char sp;
        if (sscanf(line, "%lx-%lx%c", &lo, &hi, &sp) == 3 && sp == ' ')
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (in && !strncmp(line, "VmFlags:", 8))
            said = strstr(line, " hg") != NULL;
    }
    fclose(f);
    return said;
}
#endif

/* ml_large_alloc: a block from 2 MiB up is 2 MiB-aligned and advised for
 * huge pages (where this system shows the advice: a mapping advised here
 * first, for comparison; qemu-user and kernels without THP do not), a
 * small one ML_ALIGN-aligned. */
static void test_large_alloc(void) {
    int f0 = tl_failed;
    const size_t big = (size_t)5 << 20;
    unsigned char *b = ml_large_alloc(big), *s = ml_large_alloc(1000);
    CHECK(b && (uintptr_t)b % ((size_t)2 << 20) == 0, "a 5 MiB block: 2 MiB-aligned, got %p", (void *)b);
    CHECK(s && (uintptr_t)s % ML_ALIGN == 0, "a 1000-byte block: %d-byte aligned, got %p", ML_ALIGN, (void *)s);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const size_t cn = (size_t)4 << 20;
    void *c = mmap(NULL, cn, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int shown = c != MAP_FAILED && madvise(c, cn, MADV_HUGEPAGE) == 0 && huge_advised(c) == 1;
    if (c != MAP_FAILED) munmap(c, cn);
    if (!b || !shown) SKIP("huge-page advice: this system does not show it in /proc/self/smaps");
    else CHECK(huge_advised(b) == 1, "the 5 MiB block is advised for huge pages (smaps VmFlags hg)");
#endif
    ml_aligned_free(b);
    ml_aligned_free(s);
    GROUP_DONE("large blocks (weights read into memory, benchmark buffers) are 2 MiB-aligned, for huge pages", f0);
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

/* A valid version-2 model with every new field in use: head_dim 32 with
 * dim 64 and 4 heads (q_dim 128), biases, q/k norms, llama3 rope scaling,
 * special ids, a 100-byte tokenizer and a 10-byte template section. */
static ml_mlb_header v2_header(void) {
    ml_mlb_header h = ml_mlb_make_header(64, 2, 4, 2, 96, 64, 32, ML_TYPE_Q8_0, 1);
    h.version = ML_MLB_VERSION_2;
    h.head_dim = 32, h.flags = ML_MLB_FLAG_QKV_BIAS | ML_MLB_FLAG_QK_NORM;
    h.rope_scaling = ML_MLB_ROPE_LLAMA3, h.rope_factor = 8.0f, h.rope_low_freq_factor = 1.0f;
    h.rope_high_freq_factor = 4.0f, h.rope_orig_max_seq = 16;
    h.bos = 1, h.eos = 2, h.eot = 3, h.add_bos = 1;
    uint64_t end = ml_mlb_arrays_end(&h);
    h.tok_off = (end + 63) / 64 * 64, h.tok_bytes = 100;
    h.tmpl_off = (h.tok_off + 100 + 63) / 64 * 64, h.tmpl_bytes = 10;
    return h;
}

static uint64_t write_v2(const ml_mlb_header *h) {
    ml_err err;
    CHECK(ml_mlb_random_write(path, h, 1, &err) == ML_OK, "write the v2 model: %s", err.msg);
    return ml_mlb_random_bytes(h);
}

/* Poke a 4-byte (or 8-byte) field of the valid v2 model; expect want naming field. */
static void v2_case(const char *field, size_t off, const void *v, size_t n, ml_status want, const char *what) {
    ml_mlb_header h = v2_header();
    write_v2(&h);
    poke((long)off, v, n);
    expect(want, field, what);
}

static void test_v2(void) {
    int f0 = tl_failed;
    ml_mlb_header h = v2_header();
    uint64_t size = write_v2(&h);
    ml_model m;
    ml_err err = {{0}};
    ml_open_opts oo = {.use_mmap = 1, .n_threads = 1};
    ml_status s = ml_model_open(&m, path, &oo, &err);
    CHECK(s == ML_OK, "the valid v2 model loads: %s", err.msg);
    if (s == ML_OK) {
        const ml_config *c = &m.cfg;
        CHECK(c->version == 2 && c->head_dim == 32 && c->q_dim == 128 && c->kv_dim == 64 && c->qkv_bias &&
              c->qk_norm && c->rope_scaling == 1 && c->bos == 1 && c->eos == 2 && c->eot == 3 && c->add_bos == 1,
              "v2 config fields");
        CHECK(m.w.layers[1].bq && m.w.layers[1].bk && m.w.layers[1].bv && m.w.layers[1].q_norm &&
              m.w.layers[1].k_norm && m.w.layers[0].wq.rows == 128 && m.w.layers[0].wo.cols == 128,
              "v2 tensors: biases, norms, wq (q_dim, dim), wo (dim, q_dim)");
        CHECK(m.tokenizer.len == 100 && m.tokenizer.data == m.file.data + h.tok_off && m.chat_template.len == 10 &&
              m.chat_template.data[0] == 'x', "v2 sections: views into the file");
        CHECK(ml_forward(&m, 5, 0, &err) == ML_OK && ml_forward(&m, 6, 1, &err) == ML_OK, "v2 forward: %s", err.msg);
        ml_model_close(&m);
    }
    GROUP_DONE("a version-2 model with every field loads and runs", f0);

    /* The same model with fp16 block scales (stype 1): scale arrays of half the bytes. */
    f0 = tl_failed;
    ml_mlb_header h16 = v2_header();
    h16.stype = ML_MLB_STYPE_F16;
    h16.tok_off = (ml_mlb_arrays_end(&h16) + 63) / 64 * 64;
    h16.tmpl_off = (h16.tok_off + 100 + 63) / 64 * 64;
    CHECK(write_v2(&h16) < size, "fp16 scales: a smaller file than fp32 scales");
    s = ml_model_open(&m, path, &oo, &err);
    CHECK(s == ML_OK, "the v2 model with fp16 scales loads: %s", err.msg);
    if (s == ML_OK) {
        CHECK(m.cfg.stype == ML_TYPE_F16 && m.w.layers[1].w2.stype == ML_TYPE_F16 && m.w.tok_emb.stype == ML_TYPE_F16,
              "fp16 scales: the config and every matrix say so");
        CHECK(ml_forward(&m, 5, 0, &err) == ML_OK && ml_forward(&m, 6, 1, &err) == ML_OK, "fp16 forward: %s", err.msg);
        ml_model_close(&m);
    }
    GROUP_DONE("a version-2 model with fp16 block scales loads and runs", f0);

    f0 = tl_failed;
    uint32_t one = 1, two = 2, three = 3, odd = 31, big = 32768, bad_flag = 4;
    int32_t minus2 = -2, vocab = 64, none = -1;
    float nan_v = NAN, neg = -1.0f, lo = 4.0f;
    uint64_t u64;
    v2_case("stype", 52, &two, 4, ML_E_FORMAT, "stype 2");
    v2_case("head_dim", 56, &odd, 4, ML_E_SHAPE, "head_dim odd");
    v2_case("head_dim", 56, &big, 4, ML_E_SHAPE, "head_dim * n_heads too large");
    v2_case("flags", 60, &bad_flag, 4, ML_E_FORMAT, "flags bit 2");
    v2_case("rope_scaling", 64, &two, 4, ML_E_FORMAT, "rope_scaling 2");
    v2_case("rope_factor", 68, &nan_v, 4, ML_E_FORMAT, "rope_factor NaN");
    v2_case("rope_factor", 68, &neg, 4, ML_E_FORMAT, "rope_factor < 0");
    v2_case("rope_low_freq_factor", 72, &neg, 4, ML_E_FORMAT, "rope_low_freq_factor < 0");
    v2_case("rope_high_freq_factor", 72, &lo, 4, ML_E_FORMAT, "rope_low_freq_factor 4 = rope_high_freq_factor");
    v2_case("rope_orig_max_seq", 80, &(uint32_t){0}, 4, ML_E_FORMAT, "rope_orig_max_seq 0");
    v2_case("bos", 84, &vocab, 4, ML_E_FORMAT, "bos = vocab");
    v2_case("eos", 88, &minus2, 4, ML_E_FORMAT, "eos -2");
    v2_case("eot", 92, &vocab, 4, ML_E_FORMAT, "eot = vocab");
    v2_case("add_bos", 96, &two, 4, ML_E_FORMAT, "add_bos 2");
    v2_case("add_bos", 84, &none, 4, ML_E_FORMAT, "add_bos 1 without bos");
    v2_case("reserved", 100, &one, 4, ML_E_FORMAT, "reserved word");
    v2_case("header byte 200 (reserved)", 200, &three, 1, ML_E_FORMAT, "reserved byte");
    v2_case("header byte 136 (reserved)", 136, &one, 1, ML_E_FORMAT, "first reserved byte");
    u64 = h.tok_off + 8;
    v2_case("tok_off", 104, &u64, 8, ML_E_FORMAT, "tok_off not 64-aligned");
    u64 = h.tok_off - 64;
    v2_case("tok_off", 104, &u64, 8, ML_E_FORMAT, "tok_off over the last array");
    u64 = 0;
    v2_case("tok_off", 112, &u64, 8, ML_E_FORMAT, "tok_off without tok_bytes");
    u64 = size;
    v2_case("tok_off", 112, &u64, 8, ML_E_FORMAT, "tok_bytes past the end");
    u64 = h.tok_off;
    v2_case("tmpl_off", 120, &u64, 8, ML_E_FORMAT, "tmpl over the tokenizer");
    u64 = 1ull << 62;
    v2_case("tmpl_off", 128, &u64, 8, ML_E_FORMAT, "tmpl_bytes huge");
    v2_case("chat template: a NUL byte", (size_t)h.tmpl_off + 3, "", 1, ML_E_FORMAT, "NUL in the template");
    v2_case("padding before tensor chat template", (size_t)h.tmpl_off - 1, "y", 1, ML_E_FORMAT, "data in the padding");
    v2_case("file size", 128, &(uint64_t){5}, 8, ML_E_FORMAT, "the template shorter than the file");
    h = v2_header();
    write_v2(&h);
    CHECK(truncate(path, (off_t)size - 1) == 0, "truncate");
    expect(ML_E_FORMAT, "tmpl_off", "the template cut");
    GROUP_DONE("version-2 fields and sections checked, each named", f0);
}

/* --layout: 9 header values, or 11 (then head_dim and flags of version 2), or 12 (then stype). */
static int print_layout(char **arg, int n) {
    uint32_t v[12] = {0};
    for (int i = 0; i < n; i++) v[i] = (uint32_t)strtoul(arg[i], NULL, 10);
    ml_mlb_header h = ml_mlb_make_header(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]);
    if (n >= 11) h.version = ML_MLB_VERSION_2, h.head_dim = v[9], h.flags = v[10];
    if (n == 12) h.stype = v[11];
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
    if ((argc == 11 || argc == 13 || argc == 14) && !strcmp(argv[1], "--layout")) return print_layout(argv + 2, argc - 2);
    strcpy(path, "/tmp/ml_loader_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) {
        CHECK(0, "mkstemp");
        return tl_summary();
    }
    close(fd);

    /* ---- a message prefixed with its own text (the GGUF importer's "path: why") ---- */
    ml_err pre;
    ml_errf(&pre, ML_E_FORMAT, "tensor blk.0.attn_v.weight: data offset 4064 is not a multiple of 64");
    ml_errf(&pre, ML_E_FORMAT, "%s: %s", "align64.gguf", pre.msg);
    CHECK(!strcmp(pre.msg, "align64.gguf: tensor blk.0.attn_v.weight: data offset 4064 is not a multiple of 64"),
          "ml_errf with its own message as an argument: '%s'", pre.msg);

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
    test_large_alloc();

    /* ---- header fields ---- */
    f0 = tl_failed;
    header_case("magic", 0, 0x46554747u /* "GGUF" */, ML_E_FORMAT);
    header_case("version", 4, 3, ML_E_FORMAT);       /* 1 and 2 exist */
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
    expect(ML_E_IO, "a folder, not a file", "directory");
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

    test_v2();
    unlink(path);
    return tl_summary();
}
