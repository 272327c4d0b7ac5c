/* Static binding of each generic kernel name to the best implementation the
 * selected ISA has (DESIGN §3). No function pointers: ml_k_matvec_q8 is a
 * macro naming one symbol, e.g. ml_k_matvec_q8_avx2, written out per build in
 * $(BUILD)/gen/ml_bind_gen.h (`grep -n ml_k_ build/<isa>/gen/ml_bind_gen.h`
 * shows where every kernel of that build lives).
 *
 * Fallback chain: each kernels/<isa>/kernels_<isa>.h lists the kernels its
 * folder implements (ML_HAS_<KERNEL>_<ISA> 1); any other kernel is served by
 * the ISA's parent in the registry, config/isas.txt (e.g. avx2 -> sse41 ->
 * sse2 -> scalar). tools/isas.awk walks the chain when it writes the binding.
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

#include "config/ml_kernels.h"
#include "ml_bind_gen.h" /* the binding table: generic name -> this build's symbol */

/* Name of the build, e.g. "avx2". */
#define ML_ISA_NAME ML_STR(ML_ISA)

#endif
