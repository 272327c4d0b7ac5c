/* void ml_k_add_sse2(float *y, const float *x, int n);   y[i] += x[i]
 *
 * Hand-written twin of kernels/sse2/add.c, built instead of it with ASM=1
 * (kernels/sse2/asm.mk). SysV x86-64 ABI: y = rdi, x = rsi, n = edx; only
 * caller-saved registers (rax, rcx, rdx, xmm0-3) are used. SSE2 only,
 * unaligned loads/stores (movups), any n: n <= 0 does nothing, then
 * 8 floats per step, one 4-float step, and a scalar tail.
 * Each sum is y[i] + x[i] in that order, like the scalar kernel. */
#if !defined(__x86_64__)
#error "kernels/sse2/add.S is SysV x86-64 only; build this target with ASM=0"
#endif

/* Intel CET: an endbr64 landing pad and the property note, when enabled. */
#if defined(__CET__)
#include <cet.h>
#else
#define _CET_ENDBR
#endif

        .file   "add.S"                 /* names this object in the symbol table */
        .text
        .globl  ml_k_add_sse2
        .type   ml_k_add_sse2, @function
        .p2align 4
ml_k_add_sse2:
        _CET_ENDBR
        movslq  %edx, %rdx              /* n, sign-extended: negative n -> no work */
        xorl    %eax, %eax              /* i = 0 */
        leaq    8(%rax), %rcx
        cmpq    %rdx, %rcx
        jg      .Ltail4
.Lloop8:                                /* while (i + 8 <= n) */
        movups  (%rdi,%rax,4), %xmm0
        movups  16(%rdi,%rax,4), %xmm1
        movups  (%rsi,%rax,4), %xmm2
        movups  16(%rsi,%rax,4), %xmm3
        addps   %xmm2, %xmm0
        addps   %xmm3, %xmm1
        movups  %xmm0, (%rdi,%rax,4)
        movups  %xmm1, 16(%rdi,%rax,4)
        addq    $8, %rax
        leaq    8(%rax), %rcx
        cmpq    %rdx, %rcx
        jle     .Lloop8
.Ltail4:                                /* if (i + 4 <= n) */
        leaq    4(%rax), %rcx
        cmpq    %rdx, %rcx
        jg      .Ltail1
        movups  (%rdi,%rax,4), %xmm0
        movups  (%rsi,%rax,4), %xmm2
        addps   %xmm2, %xmm0
        movups  %xmm0, (%rdi,%rax,4)
        movq    %rcx, %rax
.Ltail1:                                /* while (i < n), at most 3 */
        cmpq    %rdx, %rax
        jge     .Ldone
        movss   (%rdi,%rax,4), %xmm0
        addss   (%rsi,%rax,4), %xmm0
        movss   %xmm0, (%rdi,%rax,4)
        incq    %rax
        jmp     .Ltail1
.Ldone:
        ret
        .size   ml_k_add_sse2, .-ml_k_add_sse2

        .section .note.GNU-stack,"",@progbits
