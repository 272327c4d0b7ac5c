/* matmul for the sse41 build: its own matvecs over row tiles
 * (kernels/matmul_tiles.h), weights read from memory once per batch. */
#include "kernels/matmul_tiles.h"

ML_MATMUL_BY_TILES(sse41)
