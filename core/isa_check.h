/* Start-up guard: does this CPU (and OS) support the ISA this binary was
 * built for? Compiled without ISA flags so it runs on any CPU of the
 * architecture (DESIGN §6).
 *
 * Detection is split in three so the decision logic can be tested on
 * recorded CPUs (tests/test_isa_check.c):
 *   read    ml_x86_read / getauxval        the only code that touches the CPU
 *   decode  ml_x86_decode / ml_arm_decode  recorded registers -> feature set
 *   decide  ml_isa_check_for / ml_isa_report_for   feature set + build -> verdict */
#ifndef ML_ISA_CHECK_H
#define ML_ISA_CHECK_H

#include <stdint.h>

#include "core/status.h"
#include "ml_isas_gen.h" /* ML_ISAS(X): the registry, config/isas.txt */

/* Second line of defence after the Makefile's baseline flags: functions that
 * run before the check are compiled for the architecture's baseline even if
 * someone adds -march=native or ISA flags to CFLAGS (gcc honours this; clang
 * only adds features with target(), so there the Makefile is the defence). */
#if defined(__GNUC__) && defined(__x86_64__)
#define ML_GUARD_FN __attribute__((target("arch=x86-64")))
#elif defined(__GNUC__) && defined(__i386__)
#define ML_GUARD_FN __attribute__((target("arch=i686")))
#else
#define ML_GUARD_FN
#endif

/* ML_OK, or ML_E_ISA with err naming the build, every missing feature and
 * the best build this CPU can run. On ML_OK it also tunes the kernels for
 * this CPU (ml_tune_stream, core/tune.h). */
ml_status ml_isa_check(ml_err *err);

/* A human-readable report of what the CPU and OS support and which build to
 * use, written into buf (for `ml_run --cpu-info`). */
void ml_isa_report(char *buf, size_t len);

/* The same as one line of JSON (`ml_run --cpu-info --json`, read by
 * tools/ml.sh and tools/pick_isa.sh), in this fixed layout:
 * {"arch":"x86","detected":true,"source":"...","features":["SSE2",...],
 *  "build":"scalar","needs":[],"supported":true,"runs":["scalar",...],"best":"avx2"}
 * arch is the registry's (x86, arm32, aarch64, unknown); runs lists the builds
 * of this architecture the CPU runs, lowest first; best is null when no build
 * runs or nothing is detected. */
void ml_isa_report_json(char *buf, size_t len);

/* ---- features ------------------------------------------------------------
 * OS_YMM / OS_ZMM are the OS's promise (XCR0) to save the AVX / AVX-512
 * registers; the CPUID bits alone are not enough to use those ISAs. */
typedef enum {
    ML_F_SSE2, ML_F_SSE3, ML_F_SSSE3, ML_F_SSE41, ML_F_OSXSAVE, ML_F_AVX, ML_F_FMA, ML_F_AVX2,
    ML_F_OS_YMM, ML_F_AVXVNNI, ML_F_AVX512F, ML_F_AVX512BW, ML_F_AVX512VL, ML_F_AVX512VNNI,
    ML_F_OS_ZMM,
    ML_F_NEON, ML_F_DOTPROD, ML_F_SVE,
    ML_F_F16C,
    ML_F_COUNT
} ml_cpu_feature;

#define ML_FBIT(f) (UINT32_C(1) << (f))

typedef enum { ML_ARCH_OTHER, ML_ARCH_X86, ML_ARCH_ARM32, ML_ARCH_AARCH64 } ml_cpu_arch;
/* The architecture masks of ML_ISAS ("x86" -> ML_ARCH_BIT(X86), "any"). */
#define ML_ARCH_BIT(a) (1u << ML_ARCH_##a)
#define ML_ARCH_ANY (~0u)

typedef struct {
    ml_cpu_arch arch;
    uint32_t has;   /* ML_FBIT(f) set: feature f is usable (CPU and OS) */
    int detected;   /* 0: no run-time detection here; builds are trusted as compiled */
    char source[96];/* what was read, for the report: "cpuid max leaf 0x16, xcr0 0xe7" */
    int stream;     /* core/tune.h's ML_STREAM_* for this CPU (AMD family 25 or 26 on) */
} ml_cpu_features;

/* Stable short name of a feature, as the refusal message prints it ("SSE4.1"). */
const char *ml_cpu_feature_name(ml_cpu_feature f);

/* ---- builds (the ISA= of the Makefile): ML_BUILD_SCALAR, ML_BUILD_SSE2, ...
 * in the registry's order, lowest first ------------------------------------ */
#define ML_BUILD_ENUM_(isa, ISA, parent, archs, needs) ML_BUILD_##ISA,
typedef enum { ML_ISAS(ML_BUILD_ENUM_) ML_BUILD_COUNT } ml_build;

const char *ml_build_name(ml_build b);            /* "avx2" */
const char *ml_build_parent(ml_build b);          /* the next lower ISA of the chain: "sse41" */
int ml_build_from_name(const char *name);         /* ml_build, or -1 if unknown */
ml_build ml_build_this(void);                     /* the build of this binary (ML_ISA) */
uint32_t ml_build_requires(ml_build b);             /* ML_FBIT mask of what b executes */
ml_build ml_best_build(const ml_cpu_features *f); /* the fastest build f can run */

/* ---- x86: recorded CPUID / XGETBV ----------------------------------------
 * Fields of leaves above max_leaf (or sub-leaf 1 when leaf 7 has none, or
 * xcr0 without OSXSAVE) are ignored by the decoder, whatever they hold. */
typedef struct {
    uint32_t max_leaf;          /* leaf 0 EAX */
    uint32_t l1_ecx, l1_edx;    /* leaf 1 */
    uint32_t l7_eax, l7_ebx, l7_ecx; /* leaf 7 sub-leaf 0 (EAX = max sub-leaf) */
    uint32_t l7s1_eax;          /* leaf 7 sub-leaf 1 */
    uint64_t xcr0;              /* XGETBV(0) */
    uint32_t vendor[3];         /* leaf 0 EBX, EDX, ECX: "GenuineIntel", "AuthenticAMD" */
    uint32_t l1_eax;            /* leaf 1: family, model, stepping */
} ml_x86_regs;

/* Reads the host (x86 only; zeros elsewhere). Only executes leaves that exist. */
void ml_x86_read(ml_x86_regs *r);
void ml_x86_decode(const ml_x86_regs *r, ml_cpu_features *f);

/* ---- ARM: recorded getauxval(AT_HWCAP / AT_HWCAP2) ---------------------- */
void ml_arm_decode(int aarch64, unsigned long hwcap, unsigned long hwcap2, ml_cpu_features *f);

/* The host's features (read + decode). */
void ml_cpu_detect(ml_cpu_features *f);

/* The decision for build b on features f: ML_OK, or ML_E_ISA with the message
 * "legacy-ml: this binary was built for avx2 but this CPU lacks: AVX2, FMA.
 *  Use the sse41 build (make ISA=sse41)." */
ml_status ml_isa_check_for(ml_build b, const ml_cpu_features *f, ml_err *err);
void ml_isa_report_for(ml_build b, const ml_cpu_features *f, char *buf, size_t len);
void ml_isa_report_json_for(ml_build b, const ml_cpu_features *f, char *buf, size_t len);

#endif
