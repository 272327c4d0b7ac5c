/* Replays every input of fuzz/regress/<target>/ (crashes the fuzzers found,
 * each fixed since) and fuzz/corpus/<target>/ (the seeds) through the fuzz
 * targets' own code (fuzz/fuzz_targets.h), in the normal test build: no
 * libFuzzer needed, and under SAN=1 with the sanitizers that found them.
 * A target's broken invariant is a failure naming the input file. */
#define _GNU_SOURCE /* memfd_create, in fuzz/fuzz_targets.h */
#define _FILE_OFFSET_BITS 64 /* 32-bit readdir fails (EOVERFLOW) on 64-bit directory offsets */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testlib.h"

static const char *current; /* the input being replayed */
static int broken;
#define FUZZ_FAIL(msg)                                                          \
    do {                                                                        \
        broken++;                                                               \
        printf("FAIL - %s: fuzz invariant broken: %s (%s:%d)\n", current, msg, \
               __FILE__, __LINE__);                                             \
        return;                                                                 \
    } while (0)
#include "fuzz/fuzz_targets.h"

static fuzz_tokenizers tokenizers;
static fuzz_chat_vocabs chat_vocabs;

static void run_target(const char *target, const uint8_t *d, size_t n) {
    if (!strcmp(target, "mlb")) fuzz_mlb(d, n);
    else if (!strcmp(target, "tok_load")) fuzz_tok_load(d, n);
    else if (!strcmp(target, "tok_encode")) fuzz_tok_encode(&tokenizers, d, n);
    else if (!strcmp(target, "bpe")) fuzz_bpe(d, n);
    else if (!strcmp(target, "gguf")) fuzz_gguf(d, n);
    else if (!strcmp(target, "json")) fuzz_json(d, n);
    else if (!strcmp(target, "http")) fuzz_http(d, n);
    else if (!strcmp(target, "chat")) fuzz_chat(&chat_vocabs, d, n);
    else fuzz_cli(d, n);
}

static uint8_t *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += r;
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    *n = len;
    return buf;
}

/* Replays one folder; returns the number of inputs (-1: no folder). */
static int replay_dir(const char *root, const char *kind, const char *target) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s/%s", root, kind, target);
    DIR *dp = opendir(dir);
    if (!dp) return -1;
    errno = 0;
    int count = 0;
    for (struct dirent *e; (e = readdir(dp));) {
        if (e->d_name[0] == '.') continue; /* ., .., .gitkeep */
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t n = 0;
        uint8_t *d = read_all(path, &n);
        CHECK(d != NULL, "cannot read %s", path);
        if (!d) continue;
        current = path;
        int before = broken;
        run_target(target, d, n);
        CHECK(broken == before, "%s", path);
        free(d);
        count++;
        errno = 0;
    }
    CHECK(errno == 0, "reading %s: %s", dir, strerror(errno));
    closedir(dp);
    return count;
}

int ml_main(int argc, char **argv) {
    (void)argc, (void)argv;
    const char *root = getenv("ML_FUZZ_DIR") ? getenv("ML_FUZZ_DIR") : "fuzz";
    fuzz_tokenizers_load(&tokenizers);
    CHECK(tokenizers.n >= 1, "the built-in fuzz tokenizer did not load");
    fuzz_chat_vocabs_load(&chat_vocabs);
    CHECK(chat_vocabs.n == 2, "the built-in fuzz_chat vocabularies did not load");
    if (tokenizers.n < 2) SKIP("tok_encode with tok512.bin: $MODELS/stories260K/tok512.bin not found");
    static const char *const targets[] = {"mlb", "tok_load", "tok_encode", "cli", "bpe",
                                          "gguf", "json", "http", "chat"};
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
        int f0 = tl_failed;
        int nr = replay_dir(root, "regress", targets[i]);
        int nc = replay_dir(root, "corpus", targets[i]);
        CHECK(nc > 0, "%s/corpus/%s: no seed inputs", root, targets[i]);
        char what[160];
        snprintf(what, sizeof what, "fuzz %s: %d regression and %d seed inputs replay cleanly",
                 targets[i], nr < 0 ? 0 : nr, nc < 0 ? 0 : nc);
        GROUP_DONE(what, f0);
    }
    fuzz_tokenizers_free(&tokenizers);
    fuzz_chat_vocabs_free(&chat_vocabs);
    return tl_summary();
}
