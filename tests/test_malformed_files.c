/* Malformed model and tokenizer files, walked exhaustively (tests/test_loader.c
 * and tests/test_tokenizer.c have the hand-picked cases; this walks the
 * layouts): a .mlb cut at every byte of the header and at the start, inside
 * the padding before, the middle and the last byte of every array; arrays
 * laid out at other alignments; a NaN in every scale and norm array; a Q8_0
 * -128 in every quant array; a tokenizer.bin cut at every byte and with each
 * entry's length running past the end. Each case expects the exact ml_status and a message naming the
 * field or tensor, through both the mmap and the read path. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/mlb_random.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "tests/testlib.h"

static char path[64];

/* ---- the .mlb layout: the tensor table's arrays (model/mlb.h) ------------- */

typedef struct {
    char tensor[16]; /* as the loader names it: "wq" */
    int row;         /* of the tensor table */
    int layer;       /* -1 outside the layers */
    int scales;      /* 1: a float array that must be finite (X.d or a norm) */
    uint32_t cols;   /* of the matrix whose quants these are; 0 for floats */
    uint64_t off, bytes;
} array_info;

typedef struct {
    array_info a[64];
    int n;
    uint64_t end;
    unsigned align;
} layout;

/* Arrays in file order when each starts at a multiple of align (64 is the
 * format; the others are what a writer with the wrong padding produces):
 * the table's arrays and sizes, placed here, not by the walk. */
static layout make_layout(const ml_mlb_header *h, unsigned align) {
    layout L = {.end = ML_MLB_HEADER_BYTES, .align = align};
    ml_mlb_walk w;
    ml_mlb_array m;
    ml_mlb_walk_init(&w, h);
    while (L.n < (int)(sizeof L.a / sizeof *L.a) && ml_mlb_walk_next(&w, &m)) {
        array_info *a = &L.a[L.n++];
        snprintf(a->tensor, sizeof a->tensor, "%s", m.t->name);
        a->row = (int)(m.t - ml_mlb_tensors);
        a->layer = m.layer, a->scales = m.part != ML_MLB_QUANTS, a->bytes = m.bytes;
        a->cols = m.part == ML_MLB_QUANTS ? m.cols : 0;
        a->off = (L.end + align - 1) / align * align;
        L.end = a->off + a->bytes;
    }
    return L;
}

/* The model of header h (model/mlb_random.h) with its arrays moved to the
 * offsets of layout L (zero bytes between them); NULL if L's 64-byte layout
 * disagrees with the writer's size. */
static unsigned char *make_image(const ml_mlb_header *h, const layout *L) {
    layout std = make_layout(h, ML_ALIGN);
    uint64_t n = ml_mlb_random_bytes(h);
    if (std.end != n) return NULL;
    unsigned char *src = malloc(n), *b = calloc(1, L->end);
    ml_mlb_random_fill(src, h, 5);
    memcpy(b, src, sizeof *h);
    for (int i = 0; i < L->n; i++) memcpy(b + L->a[i].off, src + std.a[i].off, L->a[i].bytes);
    free(src);
    return b;
}

static int write_bytes(const void *d, uint64_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(d, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* Open path both ways; both must give want and a message containing part,
 * or alt when it is not NULL. */
static void expect_open_either(ml_status want, const char *part, const char *alt, const char *what) {
    for (int mm = 1; mm >= 0; mm--) {
        ml_model m;
        ml_err err = {{0}};
        ml_open_opts oo = {.use_mmap = mm, .n_threads = 1};
        ml_status s = ml_model_open(&m, path, &oo, &err);
        if (s == ML_OK) ml_model_close(&m);
        CHECK(s == want && (strstr(err.msg, part) || (alt && strstr(err.msg, alt))),
              "%s (%s): expected %s naming '%s'%s%s, got %s: %s", what, mm ? "mmap" : "read",
              ml_status_name(want), part, alt ? " or " : "", alt ? alt : "", ml_status_name(s), err.msg);
    }
}

static void expect_open(ml_status want, const char *part, const char *what) {
    expect_open_either(want, part, NULL, what);
}

static void tensor_name(char *out, size_t n, const array_info *a) {
    snprintf(out, n, "tensor %s (layer %d)", a->tensor, a->layer);
}

/* v2: a version-2 header with head_dim 32 (q_dim 64 != dim), biases and
 * q/k norms, so the walk reaches every row of the table. */
static ml_mlb_header walk_header(uint32_t wtype, uint32_t shared, int v2) {
    ml_mlb_header h = ml_mlb_make_header(32, 2, 2, 1, 96, 37, 16, wtype, shared);
    if (v2) h.version = ML_MLB_VERSION_2, h.head_dim = 32, h.flags = ML_MLB_FLAG_QKV_BIAS | ML_MLB_FLAG_QK_NORM;
    return h;
}

static void test_mlb_walk(uint32_t wtype, int v2) {
    const char *wname = wtype == ML_TYPE_Q8_0 ? (v2 ? "v2 Q8_0" : "Q8_0") : (v2 ? "v2 Q4_0" : "Q4_0");
    /* vocab 37 and kv_dim 16 leave padding gaps between arrays. */
    ml_mlb_header h = walk_header(wtype, 0, v2);
    layout L = make_layout(&h, ML_ALIGN);
    unsigned char *img = make_image(&h, &L);
    char what[160], part[96];

    int f0 = tl_failed;
    CHECK(img != NULL, "model/mlb_random.h writes %llu bytes, the layout below expects %llu",
          (unsigned long long)ml_mlb_random_bytes(&h), (unsigned long long)L.end);
    if (!img) return;
    CHECK(write_bytes(img, L.end), "write");
    expect_open(ML_OK, "", "the intact image");
    /* the cases below reach every tensor of the table, quants and scales */
    int seen[64] = {0};
    for (int i = 0; i < L.n; i++) seen[L.a[i].row] |= L.a[i].scales ? 2 : 1;
    for (int r = 0; r < ml_mlb_n_tensors; r++) {
        int want = ml_mlb_tensors[r].store == ML_MLB_WTYPE ? 3 : 2;
        if (!v2 && ml_mlb_tensors[r].present && !ml_mlb_tensors[r].present(&h) && r != ml_mlb_n_tensors - 1)
            want = 0; /* a version-2 row: absent from version 1 */
        CHECK(seen[r] == want, "tensor %s: the test shape has %s", ml_mlb_tensors[r].name,
              seen[r] ? "only part of its arrays" : "none of its arrays");
    }
    CHECK(L.n < (int)(sizeof L.a / sizeof *L.a), "the test shape has more than %d arrays", L.n);
    GROUP_DONE(wname, f0); /* the layout model below agrees with the loader */

    /* Every byte of the header: an empty file, then "the header alone needs 256". */
    f0 = tl_failed;
    for (uint64_t cut = 0; cut < ML_MLB_HEADER_BYTES; cut++) {
        write_bytes(img, cut);
        snprintf(what, sizeof what, "%s cut at header byte %llu", wname, (unsigned long long)cut);
        expect_open(ML_E_FORMAT, cut == 0 ? "file is empty" : "the .mlb header alone needs 256", what);
    }
    snprintf(what, sizeof what, "%s: cut at every header byte (0..255) -> ML_E_FORMAT", wname);
    GROUP_DONE(what, f0);

    /* Every array: cut where it starts, in the padding before it, in its
     * middle and at its last byte -> "truncated: tensor <name> (layer l)". */
    f0 = tl_failed;
    int cases = 0;
    for (int i = 0; i < L.n; i++) {
        const array_info *a = &L.a[i];
        uint64_t prev_end = i ? L.a[i - 1].off + L.a[i - 1].bytes : ML_MLB_HEADER_BYTES;
        uint64_t cuts[4] = {a->off, prev_end < a->off ? prev_end + (a->off - prev_end) / 2 : a->off,
                            a->off + a->bytes / 2, a->off + a->bytes - 1};
        for (int k = 0; k < 4; k++) {
            write_bytes(img, cuts[k]);
            tensor_name(part, sizeof part, a);
            snprintf(what, sizeof what, "%s cut at byte %llu (array %d)", wname,
                     (unsigned long long)cuts[k], i);
            expect_open(ML_E_FORMAT, part, what);
            cases++;
        }
    }
    snprintf(what, sizeof what, "%s: each of %d arrays cut at its start, padding, middle, last byte (%d cuts) -> ML_E_FORMAT naming it",
             wname, L.n, cases);
    GROUP_DONE(what, f0);

    /* Trailing bytes, and a header whose classifier flag disagrees with the data. */
    f0 = tl_failed;
    unsigned char *big = calloc(1, L.end + 64);
    memcpy(big, img, L.end);
    write_bytes(big, L.end + 1);
    expect_open(ML_E_FORMAT, "file size: expected", "1 trailing byte");
    write_bytes(big, L.end + 64);
    expect_open(ML_E_FORMAT, "file size: expected", "64 trailing bytes");
    ml_mlb_header hs = h;
    hs.shared_classifier = 1; /* the data still holds wcls */
    memcpy(big, &hs, sizeof hs);
    write_bytes(big, L.end);
    expect_open(ML_E_FORMAT, "file size: expected", "shared_classifier 1 but wcls present");
    free(big);
    ml_mlb_header hu = walk_header(wtype, 1, v2);
    layout Lu = make_layout(&hu, ML_ALIGN);
    unsigned char *shared = make_image(&hu, &Lu);
    hu.shared_classifier = 0; /* claims a wcls the file lacks */
    memcpy(shared, &hu, sizeof hu);
    write_bytes(shared, Lu.end);
    expect_open(ML_E_FORMAT, "tensor wcls (layer -1)", "shared_classifier 0 but no wcls");
    free(shared);
    snprintf(what, sizeof what, "%s: trailing bytes and a wrong shared_classifier -> ML_E_FORMAT", wname);
    GROUP_DONE(what, f0);

    /* Misaligned arrays. The layout is fixed: array offsets are not stored,
     * each array starts at the first multiple of 64 after the previous one,
     * and the shapes come from the header. So a file cannot point at a
     * misaligned array; what the loader checks instead is that the padding
     * before each array is zero bytes (as the format says), that every array
     * ends inside the file, that the file ends exactly where the implied
     * layout does, and that the view it reads (mmap, or the 64-byte aligned
     * read buffer) is itself 64-byte aligned, so every array is. A writer
     * that pads to 1, 4, 16 or 32 bytes puts the next array's data where
     * the first padding should be: the loader names that tensor. One that
     * pads to 128 shifts the data later: the loader finds data in a later
     * padding, a non-finite value read from the wrong place, or the file's
     * end in the wrong place. */
    f0 = tl_failed;
    static const unsigned aligns[] = {1, 4, 16, 32, 128};
    for (size_t k = 0; k < sizeof aligns / sizeof *aligns; k++) {
        layout La = make_layout(&h, aligns[k]);
        unsigned char *mis = make_image(&h, &La);
        write_bytes(mis, La.end);
        snprintf(what, sizeof what, "%s arrays aligned to %u", wname, aligns[k]);
        int first = 0; /* the first array whose start differs */
        while (first < L.n && La.a[first].off == L.a[first].off) first++;
        CHECK(first < L.n, "%s: the test shape has no padding to misplace", what);
        if (aligns[k] < ML_ALIGN) {
            snprintf(part, sizeof part, "padding before tensor %s (layer %d)", L.a[first].tensor,
                     L.a[first].layer);
            expect_open(ML_E_FORMAT, part, what);
        } else {
            /* which check trips first depends on the bytes; each names a tensor or the size */
            expect_open_either(ML_E_FORMAT, "tensor ", "file size: expected", what);
        }
        free(mis);
    }
    snprintf(what, sizeof what, "%s: arrays at 1/4/16/32/128-byte alignment -> ML_E_FORMAT", wname);
    GROUP_DONE(what, f0);

    /* A NaN in every scale and norm array, and an Inf in a few. */
    f0 = tl_failed;
    cases = 0;
    for (int i = 0; i < L.n; i++) {
        const array_info *a = &L.a[i];
        if (!a->scales) continue;
        unsigned char *bad = malloc(L.end);
        memcpy(bad, img, L.end);
        float v = (i % 3 == 0) ? INFINITY : (i % 3 == 1) ? -INFINITY : NAN;
        memcpy(bad + a->off + (a->bytes / 8) * 4, &v, 4);
        write_bytes(bad, L.end);
        tensor_name(part, sizeof part, a);
        snprintf(what, sizeof what, "%s %g in %s", wname, (double)v, part);
        expect_open(ML_E_FORMAT, part, what);
        free(bad);
        cases++;
    }
    snprintf(what, sizeof what, "%s: NaN/Inf in each of %d scale and norm arrays -> ML_E_FORMAT naming it", wname, cases);
    GROUP_DONE(what, f0);

    /* The byte 0x80 in every quant array, first, middle and last element:
     * a Q8_0 -128 is refused naming tensor, row and block; a Q4_0 0x80 is
     * the nibbles 0 and 8, both legal. The intact image holds -127 and 127. */
    f0 = tl_failed;
    cases = 0;
    unsigned char *bad = malloc(L.end);
    for (int i = 0; i < L.n; i++) {
        const array_info *a = &L.a[i];
        if (a->scales) continue;
        uint64_t at[3] = {0, a->bytes / 2 + 7, a->bytes - 1};
        for (int k = 0; k < 3; k++) {
            memcpy(bad, img, L.end);
            bad[a->off + at[k]] = 0x80;
            write_bytes(bad, L.end);
            snprintf(what, sizeof what, "%s 0x80 at quant byte %llu of %s (layer %d)", wname,
                     (unsigned long long)at[k], a->tensor, a->layer);
            if (wtype == ML_TYPE_Q8_0) {
                snprintf(part, sizeof part, "tensor %s (layer %d) row %llu block %llu: Q8_0 quant -128",
                         a->tensor, a->layer, (unsigned long long)(at[k] / a->cols),
                         (unsigned long long)(at[k] % a->cols / ML_QK));
                expect_open(ML_E_FORMAT, part, what);
            } else {
                expect_open(ML_OK, "", what);
            }
            cases++;
        }
    }
    free(bad);
    int has_min = 0, has_max = 0;
    for (int i = 0; i < L.n && wtype == ML_TYPE_Q8_0; i++)
        for (uint64_t k = 0; k < L.a[i].bytes && !L.a[i].scales; k++)
            has_min |= img[L.a[i].off + k] == 0x81, has_max |= img[L.a[i].off + k] == 0x7F;
    CHECK(wtype != ML_TYPE_Q8_0 || (has_min && has_max), "the intact Q8_0 image holds -127 and 127");
    snprintf(what, sizeof what, wtype == ML_TYPE_Q8_0
             ? "%s: -128 at %d places in the quant arrays -> ML_E_FORMAT naming tensor, row, block"
             : "%s: byte 0x80 at %d places in the quant arrays loads (nibbles 0 and 8)", wname, cases);
    GROUP_DONE(what, f0);
    free(img);
}

/* ---- tokenizer.bin ------------------------------------------------------- */

static void test_tokenizer_walk(void) {
    static const char *const pieces[] = {"<unk>", "\n<s>\n", "\n</s>\n", "<0x41>", " ", "a", "b",
                                         "ab", " a", "\xe4\xb8\xad", "abc"};
    enum { N = sizeof pieces / sizeof *pieces };
    unsigned char img[512];
    size_t start[N + 1], n = 4;
    uint32_t max_len = 6;
    memcpy(img, &max_len, 4);
    for (int i = 0; i < N; i++) {
        start[i] = n;
        float score = -(float)i;
        uint32_t len = (uint32_t)strlen(pieces[i]);
        memcpy(img + n, &score, 4);
        memcpy(img + n + 4, &len, 4);
        memcpy(img + n + 8, pieces[i], len);
        n += 8 + len;
    }
    start[N] = n;

    int f0 = tl_failed;
    ml_tokenizer t;
    ml_err err = {{0}};
    write_bytes(img, n);
    CHECK(ml_tokenizer_load(&t, path, N, &err) == ML_OK, "intact tokenizer: %s", err.msg);
    ml_tokenizer_free(&t);
    /* Every cut predicts its message: the 4-byte header, an entry header, a
     * piece, or (at an entry boundary) too few tokens for the vocab. */
    for (size_t cut = 0; cut < n; cut++) {
        char want[96];
        int e = 0;
        while (e < N && start[e + 1] <= cut) e++;
        if (cut == 0) snprintf(want, sizeof want, "empty");
        else if (cut < 4) snprintf(want, sizeof want, "too short for the 4-byte max_token_length");
        else if (cut == start[e]) snprintf(want, sizeof want, "has %d tokens, model vocab is %d", e, N);
        else if (cut < start[e] + 8) snprintf(want, sizeof want, "token %d: the 8-byte entry header", e);
        else snprintf(want, sizeof want, "token %d: its %zu bytes", e, strlen(pieces[e]));
        write_bytes(img, cut);
        ml_status s = ml_tokenizer_load(&t, path, N, &err);
        CHECK(s == ML_E_FORMAT && strstr(err.msg, want), "tokenizer cut at %zu: expected ML_E_FORMAT '%s', got %s: %s",
              cut, want, ml_status_name(s), err.msg);
        if (s == ML_OK) ml_tokenizer_free(&t);
    }
    GROUP_DONE("tokenizer.bin cut at every byte -> ML_E_FORMAT with the exact reason", f0);

    /* Each entry's len running one byte past the end of the file. */
    f0 = tl_failed;
    for (int e = 0; e < N; e++) {
        unsigned char bad[512];
        memcpy(bad, img, n);
        uint32_t len = (uint32_t)(n - (start[e] + 8) + 1), big = ML_TOK_MAX_PIECE;
        memcpy(bad, &big, 4); /* so len passes the max_token_length check */
        memcpy(bad + start[e] + 4, &len, 4);
        write_bytes(bad, n);
        char want[64];
        snprintf(want, sizeof want, "token %d: its %u bytes", e, (unsigned)len);
        ml_status s = ml_tokenizer_load(&t, path, N, &err);
        CHECK(s == ML_E_FORMAT && strstr(err.msg, want) && strstr(err.msg, "run past the end"),
              "entry %d len %u: got %s: %s", e, (unsigned)len, ml_status_name(s), err.msg);
        if (s == ML_OK) ml_tokenizer_free(&t);
    }
    GROUP_DONE("tokenizer.bin: each entry's len one byte past the end -> ML_E_FORMAT", f0);

    /* The vocab of another model, either side. */
    f0 = tl_failed;
    write_bytes(img, n);
    for (int v = N - 2; v <= N + 2; v++) {
        if (v == N) continue;
        char want[64];
        snprintf(want, sizeof want, "has %d tokens, model vocab is %d", N, v);
        ml_status s = ml_tokenizer_load(&t, path, v, &err);
        CHECK(s == ML_E_FORMAT && strstr(err.msg, want), "vocab %d: got %s: %s", v, ml_status_name(s), err.msg);
        if (s == ML_OK) ml_tokenizer_free(&t);
    }
    GROUP_DONE("tokenizer.bin of another vocab -> ML_E_FORMAT naming both sizes", f0);
}

int ml_main(int argc, char **argv) {
    (void)argc, (void)argv;
    strcpy(path, "/tmp/ml_malformed_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) {
        CHECK(0, "mkstemp");
        return tl_summary();
    }
    close(fd);
    test_mlb_walk(ML_TYPE_Q8_0, 0);
    test_mlb_walk(ML_TYPE_Q4_0, 0);
    test_mlb_walk(ML_TYPE_Q8_0, 1);
    test_mlb_walk(ML_TYPE_Q4_0, 1);
    test_tokenizer_walk();
    unlink(path);
    return tl_summary();
}
