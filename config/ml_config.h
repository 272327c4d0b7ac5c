/* Static binding of each generic kernel name to the best implementation the
 * selected ISA has (DESIGN §3). No function pointers: ml_k_matvec_q8 is a
 * macro naming one symbol, e.g. ml_k_matvec_q8_avx2.
 *
 * Fallback chain: each kernels/<isa>/kernels_<isa>.h says, per kernel,
 * ML_HAS_<KERNEL>_<ISA> 1 or 0. A 0 resolves to the next lower ISA:
 *   avx512vnni -> avxvnni -> avx2 -> sse41 -> sse2 -> scalar
 *   sve -> neon_dotprod -> neon -> scalar
 * The build passes -DML_ISA=<isa>; only the chain below that ISA is compiled. */
#ifndef ML_CONFIG_H
#define ML_CONFIG_H

#include "config/ml_kernels.h"

#ifndef ML_ISA
#error "build with -DML_ISA=<isa> (the Makefile does this)"
#endif

#define ML_CAT_(a, b) a##b
#define ML_CAT(a, b) ML_CAT_(a, b)
#define ML_STR_(a) #a
#define ML_STR(a) ML_STR_(a)
#define ML_IF_1(yes, no) yes
#define ML_IF_0(yes, no) no
#define ML_IF(cond, yes, no) ML_CAT(ML_IF_, cond)(yes, no)

/* ---- the chain: ML_PICK_<isa>(KERNEL) is the ISA suffix that serves it --- */
#define ML_PICK_scalar(K) scalar
#define ML_PICK_sse2(K) ML_IF(ML_HAS_##K##_SSE2, sse2, ML_PICK_scalar(K))
#define ML_PICK_sse41(K) ML_IF(ML_HAS_##K##_SSE41, sse41, ML_PICK_sse2(K))
#define ML_PICK_avx2(K) ML_IF(ML_HAS_##K##_AVX2, avx2, ML_PICK_sse41(K))
#define ML_PICK_avxvnni(K) ML_IF(ML_HAS_##K##_AVXVNNI, avxvnni, ML_PICK_avx2(K))
#define ML_PICK_avx512vnni(K) ML_IF(ML_HAS_##K##_AVX512VNNI, avx512vnni, ML_PICK_avxvnni(K))
#define ML_PICK_neon(K) ML_IF(ML_HAS_##K##_NEON, neon, ML_PICK_scalar(K))
#define ML_PICK_neon_dotprod(K) ML_IF(ML_HAS_##K##_NEON_DOTPROD, neon_dotprod, ML_PICK_neon(K))
#define ML_PICK_sve(K) ML_IF(ML_HAS_##K##_SVE, sve, ML_PICK_neon_dotprod(K))

/* The capability tables (each a list of ML_HAS_<KERNEL>_<ISA> 0/1). They
 * hold only macros, so all are included; ML_PICK reads those of the chain. */
#include "kernels/sse2/kernels_sse2.h"
#include "kernels/sse41/kernels_sse41.h"
#include "kernels/avx2/kernels_avx2.h"
#include "kernels/avxvnni/kernels_avxvnni.h"
#include "kernels/avx512vnni/kernels_avx512vnni.h"
#include "kernels/neon/kernels_neon.h"
#include "kernels/neon_dotprod/kernels_neon_dotprod.h"
#include "kernels/sve/kernels_sve.h"

#define ML_BIND(name, NAME) ML_CAT(ml_k_##name##_, ML_CAT(ML_PICK_, ML_ISA)(NAME))

/* ---- the binding table: generic name -> selected symbol ---------------- */
#define ml_k_matvec_q8 ML_BIND(matvec_q8, MATVEC_Q8)
#define ml_k_matvec_q4 ML_BIND(matvec_q4, MATVEC_Q4)
#define ml_k_quantize_q8 ML_BIND(quantize_q8, QUANTIZE_Q8)
#define ml_k_rmsnorm ML_BIND(rmsnorm, RMSNORM)
#define ml_k_softmax ML_BIND(softmax, SOFTMAX)
#define ml_k_rope ML_BIND(rope, ROPE)
#define ml_k_silu_mul ML_BIND(silu_mul, SILU_MUL)
#define ml_k_add ML_BIND(add, ADD)
#define ml_k_dot_f32 ML_BIND(dot_f32, DOT_F32)
#define ml_k_axpy_f32 ML_BIND(axpy_f32, AXPY_F32)

/* Name of the build, e.g. "avx2". */
#define ML_ISA_NAME ML_STR(ML_ISA)

#endif
