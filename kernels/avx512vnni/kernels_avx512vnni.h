/* The kernels kernels/avx512vnni/ implements (ML_HAS_<KERNEL>_<ISA> 1); the others
 * fall back to the next lower ISA of the chain (config/isas.txt, tools/isas.awk).
 * 512-bit vectors, masked tails, vpmovsdb and vscalefps gain (measured) on
 * matvec, quantize and the element-wise kernels; dot_f32 and rmsnorm are
 * bound by the canonical single 8-lane sum (kernels/canon.h), so they stay
 * avx2's. No kernel here binds to avxvnni: the build never executes AVX-VNNI
 * (VEX) instructions, which some AVX-512 VNNI CPUs (Ice Lake, Zen 4) lack. */
#ifndef ML_KERNELS_AVX512VNNI_H
#define ML_KERNELS_AVX512VNNI_H

#define ML_HAS_MATVEC_Q8_AVX512VNNI 1
#define ML_HAS_MATVEC_Q4_AVX512VNNI 1
#define ML_HAS_MATMUL_Q8_AVX512VNNI 1
#define ML_HAS_MATMUL_Q4_AVX512VNNI 1
#define ML_HAS_MATVEC_Q8_F16_AVX512VNNI 1
#define ML_HAS_MATVEC_Q4_F16_AVX512VNNI 1
#define ML_HAS_MATMUL_Q8_F16_AVX512VNNI 1
#define ML_HAS_MATMUL_Q4_F16_AVX512VNNI 1
/* weight_layout asks the loader for ML_LAYOUT_R16, which only this folder's
 * matvec and matmul read: an ISA above that replaces them replaces it too */
#define ML_HAS_WEIGHT_LAYOUT_AVX512VNNI 1
#define ML_HAS_QUANTIZE_Q8_AVX512VNNI 1
#define ML_HAS_SOFTMAX_AVX512VNNI 1
#define ML_HAS_ROPE_AVX512VNNI 1
#define ML_HAS_SILU_MUL_AVX512VNNI 1
#define ML_HAS_ADD_AVX512VNNI 1
#define ML_HAS_AXPY_F32_AVX512VNNI 1
#define ML_HAS_ATTN_SCORES_AVX512VNNI 1
#define ML_HAS_ATTN_VALUES_AVX512VNNI 1

#endif
