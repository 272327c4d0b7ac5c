/* The scalar kernels read the file's layout (and every build whose
 * weight_layout falls back here). */
#include "config/ml_kernels.h"

int ml_k_weight_layout_scalar(int type, int stype) {
    (void)type, (void)stype;
    return ML_LAYOUT_ROWS;
}
