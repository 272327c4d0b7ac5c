# The ARM builds the instruction counters measure (tools/insn_per_token.sh,
# tools/insn_matmul.sh), sourced by them: ROWS, one per build and qemu CPU.
A32=arm-linux-gnueabihf- A64=aarch64-linux-gnu-
Q32="qemu-arm -L /usr/arm-linux-gnueabihf" Q64="qemu-aarch64 -L /usr/aarch64-linux-gnu"

# label | ISA | CROSS | qemu command with -cpu
ROWS=(
    "aarch64-scalar|scalar|$A64|$Q64 -cpu cortex-a53"
    "aarch64-neon|neon|$A64|$Q64 -cpu cortex-a53"
    "aarch64-neon_dotprod|neon_dotprod|$A64|$Q64 -cpu cortex-a76"
    "aarch64-sve-128|sve|$A64|$Q64 -cpu max,sve-default-vector-length=16"
    "aarch64-sve-256|sve|$A64|$Q64 -cpu max,sve-default-vector-length=32"
    "aarch64-sve-512|sve|$A64|$Q64 -cpu max,sve-default-vector-length=64"
    "aarch64-sve-2048|sve|$A64|$Q64 -cpu max,sve-default-vector-length=256"
    "armv7-scalar|scalar|$A32|$Q32 -cpu cortex-a15"
    "armv7-neon|neon|$A32|$Q32 -cpu cortex-a15"
)
