#include "model/nfc.h"

#include <string.h>

#include "model/unicode_tables.h"

/* Hangul syllables (Unicode 3.12): S = SBASE + (L * VCOUNT + V) * TCOUNT + T. */
enum {
    SBASE = 0xAC00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11A7,
    LCOUNT = 19, VCOUNT = 21, TCOUNT = 28, NCOUNT = VCOUNT * TCOUNT, SCOUNT = LCOUNT * NCOUNT
};

/* The work array holds code points with their class above them (cp | ccc <<
 * CCC_SHIFT); a byte that is no UTF-8 is INVALID + the byte: beyond Unicode,
 * class 0, in no table. */
#define CCC_SHIFT 22
#define CP_MASK ((1u << CCC_SHIFT) - 1)
#define INVALID 0x110000u
/* tools/gen_unicode.py checks: no full decomposition is longer. */
#define MAX_DECOMP 4

/* The value of the range of r (n, sorted) that holds cp; 0 if none. */
static unsigned range_value(const ml_nfc_range *r, int n, uint32_t cp) {
    int lo = 0, hi = n - 1;
    if (cp < r[0].lo) return 0;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < r[mid].lo) hi = mid - 1;
        else if (cp > r[mid].hi) lo = mid + 1;
        else return r[mid].value;
    }
    return 0;
}

static unsigned ccc_of(uint32_t cp) { return range_value(ml_nfc_ccc, ml_nfc_n_ccc, cp); }
static unsigned unstable(uint32_t cp) { return range_value(ml_nfc_unstable, ml_nfc_n_unstable, cp); }

static const ml_nfc_decomp_entry *decomp_of(uint32_t cp) {
    int lo = 0, hi = ml_nfc_n_decomp - 1;
    if (cp < ml_nfc_decomp[0].cp) return NULL;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < ml_nfc_decomp[mid].cp) hi = mid - 1;
        else if (cp > ml_nfc_decomp[mid].cp) lo = mid + 1;
        else return &ml_nfc_decomp[mid];
    }
    return NULL;
}

/* Append cp's full canonical decomposition to out; returns its length. */
static int decompose(uint32_t cp, int *out) {
    if (cp - SBASE < SCOUNT) {
        uint32_t s = cp - SBASE, t = s % TCOUNT;
        out[0] = (int)(LBASE + s / NCOUNT);
        out[1] = (int)(VBASE + s % NCOUNT / TCOUNT);
        if (!t) return 2;
        out[2] = (int)(TBASE + t);
        return 3;
    }
    const ml_nfc_decomp_entry *e = decomp_of(cp);
    if (!e) {
        out[0] = (int)(cp | ccc_of(cp) << CCC_SHIFT);
        return 1;
    }
    int k = decompose(e->first, out);
    return e->second ? k + decompose(e->second, out + k) : k;
}

/* The primary composite of a then b, 0 if none. */
static uint32_t compose(uint32_t a, uint32_t b) {
    if (a - LBASE < LCOUNT && b - VBASE < VCOUNT) return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
    if (a - SBASE < SCOUNT && (a - SBASE) % TCOUNT == 0 && b - TBASE - 1 < TCOUNT - 1) return a + (b - TBASE);
    if (b < 0x300) return 0;
    int lo = 0, hi = ml_nfc_n_comp - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const ml_nfc_decomp_entry *e = &ml_nfc_decomp[ml_nfc_comp[mid]];
        if (a < e->first || (a == e->first && b < e->second)) hi = mid - 1;
        else if (a > e->first || b > e->second) lo = mid + 1;
        else return e->cp;
    }
    return 0;
}

/* Is the code point at s[i] (*len bytes) one NFC leaves alone and cannot
 * join to what comes before (UAX #15's stable code points)? A byte that is
 * no UTF-8 is: it goes through as it is and composes with nothing. */
static int stable_at(const unsigned char *s, size_t n, size_t i, size_t *len) {
    if (s[i] < 0x80) {
        *len = 1;
        return 1;
    }
    int32_t cp = ml_utf8_decode(s, n, i, len);
    return cp < 0 || !unstable((uint32_t)cp);
}

int ml_nfc_quick(const unsigned char *s, size_t n) {
    for (size_t i = 0, l; i < n; i += l)
        if (!stable_at(s, n, i, &l)) return 0;
    return 1;
}

size_t ml_nfc_bound(const unsigned char *s, size_t n) {
    size_t bytes = 0;
    for (size_t i = 0, l; i < n; i += l) {
        int32_t cp = ml_utf8_decode(s, n, i, &l);
        if (cp < 0x80) { /* ASCII, or a byte that is no UTF-8 */
            bytes++;
            continue;
        }
        int d[MAX_DECOMP], k = decompose((uint32_t)cp, d);
        unsigned char u[4];
        size_t dec = 0;
        for (int j = 0; j < k; j++) dec += ml_utf8_encode((uint32_t)d[j] & CP_MASK, u);
        bytes += dec > l ? dec : l;
    }
    return bytes;
}

/* Sort a run of non-starters by class, stably (the canonical order). Runs
 * are short in text; a long one (thousands of stacked marks) is counted, so
 * no input takes quadratic time. tmp: room for n. */
static void sort_run(int *a, size_t n, int *tmp) {
    if (n < 32) {
        for (size_t i = 1; i < n; i++) {
            int v = a[i];
            size_t j = i;
            for (; j > 0 && a[j - 1] >> CCC_SHIFT > v >> CCC_SHIFT; j--) a[j] = a[j - 1];
            a[j] = v;
        }
        return;
    }
    size_t at[257] = {0};
    for (size_t i = 0; i < n; i++) at[(a[i] >> CCC_SHIFT) + 1]++;
    for (int c = 0; c < 256; c++) at[c + 1] += at[c];
    for (size_t i = 0; i < n; i++) tmp[at[a[i] >> CCC_SHIFT]++] = a[i];
    for (size_t i = 0; i < n; i++) a[i] = tmp[i];
}

/* The algorithm itself, on the whole of s[0 .. n). */
static size_t nfc_region(const unsigned char *s, size_t n, int *work, unsigned char *out) {
    size_t m = 0;
    for (size_t i = 0, l; i < n; i += l) {
        int32_t cp = ml_utf8_decode(s, n, i, &l);
        if (cp < 0) work[m++] = (int)(INVALID + s[i]);
        else m += (size_t)decompose((uint32_t)cp, work + m);
    }
    for (size_t i = 0; i < m;) {
        size_t j = i;
        while (j < m && work[j] >> CCC_SHIFT) j++;
        sort_run(work + i, j - i, work + m);
        i = j > i ? j : i + 1;
    }
    /* Compose in place: a character joins the last starter when nothing
     * between them blocks it (a class 0, or a class >= its own) and the two
     * have a primary composite. */
    size_t k = 0, st = (size_t)-1;
    for (size_t i = 0; i < m; i++) {
        int v = work[i];
        unsigned cc = (unsigned)v >> CCC_SHIFT;
        if (st != (size_t)-1 && (k - 1 == st || (unsigned)work[k - 1] >> CCC_SHIFT < cc)) {
            uint32_t c = compose((uint32_t)work[st] & CP_MASK, (uint32_t)v & CP_MASK);
            if (c) {
                work[st] = (int)c; /* a starter (tools/gen_unicode.py checks) */
                continue;
            }
        }
        if (!cc) st = k;
        work[k++] = v;
    }
    size_t o = 0;
    for (size_t i = 0; i < k; i++) {
        uint32_t cp = (uint32_t)work[i] & CP_MASK;
        if (cp >= INVALID) out[o++] = (unsigned char)(cp - INVALID);
        else o += ml_utf8_encode(cp, out + o);
    }
    return o;
}

/* Only the stretches around code points that are not stable go through the
 * algorithm: each from the stable code point before it (which it may join)
 * to the next stable one; the rest is copied. */
size_t ml_nfc(const unsigned char *s, size_t n, int *work, unsigned char *out) {
    size_t o = 0, done = 0, last = 0, i = 0, l;
    while (i < n) {
        if (stable_at(s, n, i, &l)) {
            last = i;
            i += l;
            continue;
        }
        size_t end = i + l;
        while (end < n && !stable_at(s, n, end, &l)) end += l;
        memcpy(out + o, s + done, last - done);
        o += last - done;
        o += nfc_region(s + last, end - last, work, out + o);
        done = i = end;
    }
    memcpy(out + o, s + done, n - done);
    return o + n - done;
}
