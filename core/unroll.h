/* Loop unrolling pragmas, for the kernels and for the few loops outside
 * them that must compile to straight code (model/forward_check.c). */
#ifndef ML_CORE_UNROLL_H
#define ML_CORE_UNROLL_H

/* Fully unroll the next loop (constant trip count): the row and dot loops of
 * the matvec body must become straight code so their vectors stay in
 * registers; gcc -O2 would otherwise keep them as loops over stack arrays. */
#if defined(__clang__)
#define ML_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define ML_UNROLL _Pragma("GCC unroll 16")
#else
#define ML_UNROLL
#endif

/* Unroll the next loop n times (a constant): for a loop of independent
 * integer sums, where the full unroll lets gcc regroup the additions and
 * compute every product first, spilling them to the stack (the sse2
 * matmul's 16 pairs per block: 1.9x slower fully unrolled). */
#define ML_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define ML_UNROLL_N(n) ML_PRAGMA(unroll n)
#elif defined(__GNUC__)
#define ML_UNROLL_N(n) ML_PRAGMA(GCC unroll n)
#else
#define ML_UNROLL_N(n)
#endif

#endif
