/* Helpers shared by every kernel folder (x86 and ARM alike). Header
 * only: the Makefile compiles the .c files of chain folders, never this one. */
#ifndef ML_KERNEL_UTIL_H
#define ML_KERNEL_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "core/quant.h"
#include "core/unroll.h"

/* Small per-ISA helpers must inline into the loops that call them, or each
 * 16-byte block costs a call and spills every vector argument. */
#if defined(_MSC_VER) && !defined(__clang__)
#define ML_INLINE static __forceinline
#else
#define ML_INLINE static inline __attribute__((always_inline))
#endif

/* For a kernel whose register tile only just fits (the ARM matmuls: a
 * weight block, a dozen token sums, the token in flight): gcc's scheduler
 * before register allocation interleaves the tile's tokens until the sums
 * spill (measured: +11% instructions for neon_dotprod Q8_0, and stack
 * traffic in the SVE one); without it the tile stays in registers. */
#if defined(__GNUC__) && !defined(__clang__)
#define ML_NO_PRESCHED __attribute__((optimize("no-schedule-insns")))
#else
#define ML_NO_PRESCHED
#endif

/* Block scale i of a weight matrix whose scales d are of type st (ML_TYPE_F32
 * or ML_TYPE_F16, a constant after inlining): the scalar scale load, and the
 * integer conversion (core/quant.h) of the builds without an fp16 instruction
 * (sse2, sse41, ARMv7 neon). Exact either way. */
ML_INLINE float ml_scale_at(const void *d, size_t i, ml_type st) {
    return st == ML_TYPE_F16 ? ml_f16_to_f32(((const uint16_t *)d)[i]) : ((const float *)d)[i];
}

#endif
