#include "model/unicode_tables.h"

int ml_uni_class(uint32_t cp) {
    int lo = 0, hi = ml_uni_n_ranges - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < ml_uni_ranges[mid].lo) hi = mid - 1;
        else if (cp > ml_uni_ranges[mid].hi) lo = mid + 1;
        else return (int)ml_uni_ranges[mid].cls;
    }
    return ML_UNI_OTHER;
}

int32_t ml_utf8_decode(const unsigned char *s, size_t n, size_t i, size_t *len) {
    unsigned c = s[i];
    uint32_t cp;
    size_t k;
    *len = 1;
    if (c < 0x80) return (int32_t)c;
    if (c >= 0xC2 && c <= 0xDF) cp = c & 0x1F, k = 2;
    else if (c >= 0xE0 && c <= 0xEF) cp = c & 0x0F, k = 3;
    else if (c >= 0xF0 && c <= 0xF4) cp = c & 0x07, k = 4;
    else return -1;
    if (n - i < k) return -1;
    for (size_t j = 1; j < k; j++) {
        if ((s[i + j] & 0xC0) != 0x80) return -1;
        cp = cp << 6 | (s[i + j] & 0x3F);
    }
    if ((k == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return -1;
    *len = k;
    return (int32_t)cp;
}

size_t ml_utf8_encode(uint32_t cp, unsigned char *o) {
    if (cp < 0x80) return o[0] = (unsigned char)cp, 1;
    if (cp < 0x800) return o[0] = (unsigned char)(0xC0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12), o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | cp >> 18), o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)), o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}
