# Kernels of this folder that ASM=1 builds from <name>.S instead of <name>.c
# (same symbol, same C ABI; DESIGN §3). add.S: ml_k_add_sse2, SysV x86-64.
ASM_SRC += kernels/sse2/add.S
