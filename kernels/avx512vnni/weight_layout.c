/* The avx512vnni matvec and matmul read Q8_0 and Q4_0 fastest with 16 rows
 * interleaved (core/pack.h): a decode step's weights are one linear stream,
 * and neither kernel transposes (matvec_body.h, matmul_body.h). */
#include "config/ml_kernels.h"

int ml_k_weight_layout_avx512vnni(int type, int stype) {
    (void)stype;
    return type == ML_TYPE_Q8_0 || type == ML_TYPE_Q4_0 ? ML_LAYOUT_R16 : ML_LAYOUT_ROWS;
}
