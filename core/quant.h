/* Block quantization formats (DESIGN §4). Everything here is part of the
 * on-disk contract: changing a constant changes the .mlb format. */
#ifndef ML_QUANT_H
#define ML_QUANT_H

#include <stdint.h>
#include <string.h>

#define ML_QK 32                      /* elements per block, every format */
#define ML_Q8_BLOCK_BYTES ML_QK       /* int8 quants per Q8_0 block */
#define ML_Q4_BLOCK_BYTES (ML_QK / 2) /* packed nibbles per Q4_0 block */
#define ML_Q8_MAX 127                 /* symmetric clamp [-127, 127] */
#define ML_Q4_OFFSET 8                /* stored nibble = value + 8 */
#define ML_ALIGN 64                   /* every on-disk and arena array */

/* Q8_0 blocks whose largest |x| is below this are stored as zero. Without it
 * a tiny (e.g. denormal) amax makes 127/amax overflow to inf and 0*inf = NaN
 * reach the float->int conversion, which is undefined in C and differs
 * between ISAs. With it, id <= 1.27e32 and d is a normal float. The lost
 * values are < 1e-30 in magnitude: noise for any activation. */
#define ML_Q8_AMAX_MIN 1e-30f

/* Element types; values are stored in the .mlb header (u32 wtype). */
typedef enum {
    ML_TYPE_F32 = 0,
    ML_TYPE_F16 = 1, /* block scales only: IEEE binary16 (the .mlb v2 stype 1) */
    ML_TYPE_Q4_0 = 2,
    ML_TYPE_Q8_0 = 8,
} ml_type;

_Static_assert(ML_QK == 32, "block size is fixed by the file format");
_Static_assert(ML_Q4_BLOCK_BYTES * 2 == ML_QK, "two Q4 nibbles per byte");
_Static_assert(ML_QK * ML_Q8_MAX * ML_Q8_MAX < INT32_MAX, "per-block int32 dot cannot overflow");
_Static_assert(2 * ML_Q8_MAX * ML_Q8_MAX < INT16_MAX, "pmaddubsw pair sum fits int16");
_Static_assert(sizeof(float) == 4, "scales are IEEE-754 binary32");

/* Bytes of quants for n elements (n a multiple of ML_QK). */
static inline uint64_t ml_quant_bytes(ml_type t, uint64_t n) {
    return t == ML_TYPE_Q8_0 ? n : t == ML_TYPE_Q4_0 ? n / 2 : n * 4;
}

/* ---- fp16 block scales ----------------------------------------------------
 * binary16 -> binary32 is exact (every half is a normal float), so a scale
 * read from an fp16 file is one well-defined float on every ISA. This is the
 * integer conversion of the scalar, sse2, sse41 and ARMv7 builds; F16C's
 * vcvtph2ps and AArch64's fcvtl give the same bits (a signaling NaN comes
 * out quiet, as IEEE says; tests/test_kernels.c checks every half). */
static inline float ml_f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu;
    uint32_t m = h & 0x3FFu, bits;
    if (e == 0x1F) { /* inf, or NaN with its payload, made quiet */
        bits = sign | 0x7F800000u | (m << 13) | (m ? 0x00400000u : 0u);
    } else if (e) { /* normal: rebias the exponent 15 -> 127 */
        bits = sign | ((e + 112u) << 23) | (m << 13);
    } else if (!m) {
        bits = sign;
    } else { /* subnormal m * 2^-24: normalize so the leading 1 is bit 10 */
        uint32_t x = 113;
        while (!(m & 0x400u)) m <<= 1, x--;
        bits = sign | (x << 23) | ((m & 0x3FFu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* binary32 -> binary16, rounded to nearest, ties to even (IEEE's default and
 * numpy's astype(float16), which tools/mlb.py uses: the same bits), with
 * overflow to inf, gradual underflow to the subnormals, NaN kept quiet. The
 * quantizer rounds each block's scale with it before quantizing the block. */
static inline uint16_t ml_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((ax >> 13) & 0x3FFu)); /* NaN */
    if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* >= 65520 (or inf): inf */
    if (ax < 0x38800000u) { /* below 2^-14: a subnormal half (or zero), units of 2^-24 */
        if (ax < 0x33000000u) return sign; /* <= 2^-25: rounds to zero (the tie, to even 0) */
        const uint32_t mant = (ax & 0x7FFFFFu) | 0x800000u, shift = 126u - (ax >> 23); /* 14 .. 24 */
        const uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        return (uint16_t)(sign | (q + (rem > half || (rem == half && (q & 1u)))));
    }
    /* normal: rebias, then round the 13 dropped bits; a carry out of the
     * mantissa steps the exponent (up to 0x7C00 = inf, excluded above) */
    const uint32_t r = ax - 0x38000000u, q = r >> 13, rem = r & 0x1FFFu;
    return (uint16_t)(sign | (q + (rem > 0x1000u || (rem == 0x1000u && (q & 1u)))));
}

/* Bytes of one block scale of scale type st (ML_TYPE_F32 or ML_TYPE_F16). */
static inline uint64_t ml_scale_bytes(ml_type st) { return st == ML_TYPE_F16 ? 2 : 4; }

#endif
