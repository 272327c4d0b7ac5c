/* Block quantization formats (DESIGN §4). Everything here is part of the
 * on-disk contract: changing a constant changes the .mlb format. */
#ifndef ML_QUANT_H
#define ML_QUANT_H

#include <stdint.h>

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

#endif
