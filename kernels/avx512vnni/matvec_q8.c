/* y = W x, Q8_0 weights, AVX-512 VNNI: 4 blocks per row per step, unsigned
 * weights in chained vpdpbusd (avx512_dot.h), in the 16-row body
 * (matvec16.h). */
#include "kernels/avx512vnni/avx512_dot.h"

#define MV16_NAME ml_k_matvec_q8_avx512vnni
#define MV16_WBYTES ML_Q8_BLOCK_BYTES
#define MV16_XPREP ml_avx512_xprep_q8
#define MV16_DOT ml_avx512_dot_q8
#define MV16_DOT1 ml_avx512_dot1x16_q8
/* Prefetch half a group ahead: a whole one (32 KiB of quants at dim 2048)
 * crowds the 48 KiB L1; TinyLlama decode was 6-17% slower with it. */
#define MV16_PF_ROWS 8
#include "kernels/avx512vnni/matvec16.h"
