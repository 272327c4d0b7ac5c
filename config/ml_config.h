/* Static binding of each generic kernel name to the best implementation the
 * selected ISA has (DESIGN §3). No function pointers: ml_k_matvec_q8 is a
 * macro naming one symbol, e.g. ml_k_matvec_q8_avx2.
 *
 * Fallback chain: each kernels/<isa>/kernels_<isa>.h says, per kernel,
 * ML_HAS_<KERNEL>_<ISA> 1 or 0. A 0 resolves to the ISA's parent in the
 * registry, config/isas.txt (e.g. avx2 -> sse41 -> sse2 -> scalar).
 * The build passes -DML_ISA=<isa>; only the chain below that ISA is compiled. */
#ifndef ML_CONFIG_H
#define ML_CONFIG_H

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

#include "config/ml_kernels.h"

/* The chain, ML_PICK_<isa>(KERNEL), and the capability tables come with the
 * registry (config/isas.txt -> ml_isas_gen.h, included by ml_kernels.h). */

#define ML_BIND(name, NAME) ML_CAT(ml_k_##name##_, ML_CAT(ML_PICK_, ML_ISA)(NAME))

/* ---- the binding table: generic name -> selected symbol ---------------- */
#define ml_k_matvec_q8 ML_BIND(matvec_q8, MATVEC_Q8)
#define ml_k_matvec_q4 ML_BIND(matvec_q4, MATVEC_Q4)
#define ml_k_matmul_q8 ML_BIND(matmul_q8, MATMUL_Q8)
#define ml_k_matmul_q4 ML_BIND(matmul_q4, MATMUL_Q4)
#define ml_k_quantize_q8 ML_BIND(quantize_q8, QUANTIZE_Q8)
#define ml_k_dequant_row_q8 ML_BIND(dequant_row_q8, DEQUANT_ROW_Q8)
#define ml_k_dequant_row_q4 ML_BIND(dequant_row_q4, DEQUANT_ROW_Q4)
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
