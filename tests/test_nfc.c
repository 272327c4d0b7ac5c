/* model/nfc: Unicode Normalization Form C as Unicode Standard Annex #15
 * defines it, on the cases that make up the algorithm (composition,
 * canonical reordering, blocking, singletons, exclusions, Hangul, starters
 * that compose, a long run of marks, bytes that are not UTF-8), then over
 * every code point: NFC is idempotent and within ml_nfc_bound, and what the
 * quick check passes is its own NFC.
 *
 * `test_nfc --filter IN OUT` writes the NFC of file IN to OUT, `test_nfc
 * --quick IN OUT` the quick check of each line of IN (a line "1" or "0"):
 * with them tests/test_nfc_ref.py compares every code point and random
 * sequences with Python's unicodedata. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/nfc.h"
#include "model/unicode_tables.h"
#include "tests/testlib.h"

/* The NFC of text (len bytes) in a static buffer, its length in *n. */
static const unsigned char *nfc(const char *text, size_t len, size_t *n) {
    static int work[2 * 4096];
    static unsigned char out[4096];
    size_t bound = ml_nfc_bound((const unsigned char *)text, len);
    if (bound > sizeof out) {
        *n = 0;
        return NULL;
    }
    *n = ml_nfc((const unsigned char *)text, len, work, out);
    return out;
}

#define EXPECT_NFC(text, want, what)                                                                   \
    do {                                                                                               \
        size_t n_;                                                                                     \
        const unsigned char *got_ = nfc(text, sizeof text - 1, &n_);                                   \
        CHECK(got_ && n_ == sizeof want - 1 && !memcmp(got_, want, n_), "%s: %zu bytes, expected %zu", \
              what, n_, sizeof want - 1);                                                              \
    } while (0)

static void test_cases(void) {
    int f0 = tl_failed;
    EXPECT_NFC("plain ASCII text", "plain ASCII text", "ASCII is its own NFC");
    EXPECT_NFC("e\xcc\x81", "\xc3\xa9", "e + COMBINING ACUTE: U+00E9");
    EXPECT_NFC("\xc3\xa9", "\xc3\xa9", "a composed letter stays");
    /* dot above (class 230) after dot below (220): reordered, the first composes */
    EXPECT_NFC("a\xcc\x87\xcc\xa3", "\xe1\xba\xa1\xcc\x87", "a + dot above + dot below: U+1EA1 U+0307");
    EXPECT_NFC("a\xcc\x81\xcc\x81", "\xc3\xa1\xcc\x81", "a second acute is blocked by the first");
    EXPECT_NFC("A\xcc\x8a\xcc\x81", "\xc7\xba", "A + ring + acute: U+01FA, composed twice");
    EXPECT_NFC("\xe2\x84\xab", "\xc3\x85", "ANGSTROM SIGN (a singleton): U+00C5");
    EXPECT_NFC("\xe2\x84\xa6", "\xce\xa9", "OHM SIGN (a singleton): U+03A9");
    EXPECT_NFC("\xe0\xa5\x98", "\xe0\xa4\x95\xe0\xa4\xbc", "DEVANAGARI QA (excluded): stays decomposed");
    EXPECT_NFC("\xcd\x84", "\xcc\x88\xcc\x81", "U+0344 (a non-starter decomposition): two marks");
    EXPECT_NFC("\xe1\xba\x9b\xcc\xa3", "\xe1\xba\x9b\xcc\xa3", "U+1E9B U+0323 (UAX #15's example)");
    EXPECT_NFC("\xe0\xad\x87\xe0\xac\xbe", "\xe0\xad\x8b", "two starters compose: ORIYA E + AA = U+0B4B");
    EXPECT_NFC("\xe1\x84\x8f\xe1\x85\xa1\xe1\x86\xae", "\xec\xb9\xbb", "Hangul L V T: one syllable U+CE7B");
    EXPECT_NFC("\xea\xb0\x80\xe1\x86\xa8", "\xea\xb0\x81", "Hangul LV + T: U+AC01");
    EXPECT_NFC("\xea\xb0\x81\xe1\x86\xa8", "\xea\xb0\x81\xe1\x86\xa8", "Hangul LVT + T: no composite");
    EXPECT_NFC("\xcc\x81" "e", "\xcc\x81" "e", "a mark with no starter before it stays");
    EXPECT_NFC("\xff" "e\xcc\x81\xcc", "\xff\xc3\xa9\xcc", "bytes that are not UTF-8 go through");
    EXPECT_NFC("e\xed\xa0\x80\xcc\x81", "e\xed\xa0\x80\xcc\x81", "a surrogate's bytes block like starters");
    /* 40 marks, acute (230) and grave below (220) alternating: sorted by class
     * (the long-run path), then the first acute meets no blocker */
    char run[1 + 80], want[2 + 78];
    run[0] = 'a';
    for (int i = 0; i < 20; i++) memcpy(run + 1 + 4 * i, "\xcc\x81\xcc\x96", 4);
    memcpy(want, "\xc3\xa1", 2);
    for (int i = 0; i < 20; i++) memcpy(want + 2 + 2 * i, "\xcc\x96", 2);
    for (int i = 0; i < 19; i++) memcpy(want + 42 + 2 * i, "\xcc\x81", 2);
    size_t n;
    const unsigned char *got = nfc(run, sizeof run, &n);
    CHECK(got && n == sizeof want && !memcmp(got, want, n), "40 marks: sorted stably by class, the first acute composed");
    CHECK(ml_nfc_bound((const unsigned char *)"ASCII", 5) == 5 && ml_nfc_bound((const unsigned char *)"\xc3\xa9", 2) == 3 &&
              ml_nfc_bound((const unsigned char *)"\xea\xb0\x81", 3) == 9,
          "ml_nfc_bound: the canonical decomposition's bytes");
    /* KELVIN SIGN (3 bytes) decomposes to K: still 3, so that no cut of the
     * text (E2 84 | AA: three invalid bytes) is over the whole's bound */
    CHECK(ml_nfc_bound((const unsigned char *)"\xe2\x84\xaa", 3) == 3 &&
              ml_nfc_bound((const unsigned char *)"\xe2\x84", 2) + ml_nfc_bound((const unsigned char *)"\xaa", 1) == 3,
          "ml_nfc_bound: never fewer bytes than the text's own, also cut inside a code point");
    GROUP_DONE("NFC: composition, reordering, blocking, singletons, exclusions, Hangul, invalid bytes", f0);
}

/* Every code point, alone and after 'a' (which many marks compose with):
 * NFC within the bound, NFC again changes nothing, and a text the quick
 * check passes is its own NFC. */
static void test_every_code_point(void) {
    int f0 = tl_failed, bad = 0, quick = 0;
    for (unsigned cp = 0; cp < 0x110000; cp++) {
        if (cp >= 0xD800 && cp < 0xE000) continue;
        char s[8];
        s[0] = 'a';
        size_t len = 1 + ml_utf8_encode(cp, (unsigned char *)s + 1);
        for (int alone = 0; alone < 2; alone++) {
            const char *t = s + alone;
            size_t tl = len - (size_t)alone, n1, n2;
            unsigned char once[64];
            const unsigned char *p = nfc(t, tl, &n1);
            int ok = p && n1 <= ml_nfc_bound((const unsigned char *)t, tl) && n1 <= sizeof once;
            if (ok) {
                memcpy(once, p, n1);
                p = nfc((const char *)once, n1, &n2);
                ok = p && n2 == n1 && !memcmp(p, once, n1);
            }
            if (ml_nfc_quick((const unsigned char *)t, tl)) {
                quick += alone;
                ok = ok && n1 == tl && !memcmp(once, t, tl);
            }
            if (!ok && bad++ < 5)
                printf("  U+%04X%s: NFC over its bound, not idempotent or changes what the quick check passed\n", cp,
                       alone ? "" : " after 'a'");
        }
    }
    CHECK(!bad, "%d of 2 x 1112064 texts broke it", bad);
    /* 2100 code points are marks, singletons, exclusions or seconds of a pair */
    CHECK(quick == 1112064 - 2100, "the quick check passes %d code points alone, expected 1112064 - 2100", quick);
    GROUP_DONE("NFC of every code point: within ml_nfc_bound, idempotent, the quick check's passes unchanged", f0);
}

/* Normalize file in into file out, or with quick write the quick check of
 * each of its lines (for tests/test_nfc_ref.py). */
static int filter(const char *in, const char *out, int quick) {
    FILE *f = fopen(in, "rb");
    if (!f) return perror(in), 2;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *s = malloc((size_t)len + 1);
    size_t got = s ? fread(s, 1, (size_t)len, f) : 0;
    fclose(f);
    size_t bound = ml_nfc_bound(s, got);
    int *work = malloc((2 * bound + 1) * sizeof *work);
    unsigned char *o = malloc(2 * bound + 2);
    if (!s || got != (size_t)len || !work || !o) return fprintf(stderr, "%s: cannot read it\n", in), 2;
    size_t n = 0;
    if (!quick) n = ml_nfc(s, got, work, o);
    for (size_t i = 0, e; quick && i <= got; i = e + 1) {
        for (e = i; e < got && s[e] != '\n'; e++) {}
        o[n++] = ml_nfc_quick(s + i, e - i) ? '1' : '0';
        o[n++] = '\n';
    }
    f = fopen(out, "wb");
    int rc = !f || fwrite(o, 1, n, f) != n;
    if (f && fclose(f)) rc = 1;
    free(s), free(work), free(o);
    return rc ? (perror(out), 2) : 0;
}

int ml_main(int argc, char **argv) {
    if (argc == 4 && (!strcmp(argv[1], "--filter") || !strcmp(argv[1], "--quick")))
        return filter(argv[2], argv[3], !strcmp(argv[1], "--quick"));
    printf("Unicode %s\n", ml_nfc_version);
    test_cases();
    test_every_code_point();
    return tl_summary();
}
