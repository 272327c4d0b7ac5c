/* The scalar twin of matmul_q8 / matmul_q4: the scalar matvec over row
 * tiles, token by token (kernels/matmul_tiles.h), so by construction a
 * batch gives the bits of its tokens run one at a time. */
#include "kernels/matmul_tiles.h"

ML_MATMUL_BY_TILES(scalar)
ML_MATMUL_F16_BY_TILES(scalar)
