/* CPU / OS feature detection and the start-up ISA guard (DESIGN §6).
 *
 * Runs before any ISA-compiled code, so this file is built with baseline flags
 * only, never LTO'd, and every function carries ML_GUARD_FN. Data flow, top to
 * bottom: names and requirements -> read the host -> decode recorded registers
 * -> decide (check, best build, report). Only "read" touches the CPU; the rest
 * is plain C that tests/test_isa_check.c drives with recorded CPUs. */
#include "core/isa_check.h"

#include "core/tune.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* This binary's build, from the -DML_ISA=<isa> of every build. */
#define ML_GUARD_STR_(a) #a
#define ML_GUARD_STR(a) ML_GUARD_STR_(a)
#define ML_BUILD_THIS_NAME ML_GUARD_STR(ML_ISA)

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#define ML_HOST_X86 1
#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#endif

#if (defined(__aarch64__) || defined(__arm__)) && defined(__linux__)
#define ML_HOST_ARM_LINUX 1
#include <sys/auxv.h>
#endif

/* ==== names and requirements ============================================= */

static const char *const feature_names[ML_F_COUNT] = {
    "SSE2", "SSE3", "SSSE3", "SSE4.1", "OSXSAVE", "AVX", "FMA", "AVX2",
    "OS-YMM", "AVX-VNNI", "AVX-512F", "AVX-512BW", "AVX-512VL", "AVX-512VNNI",
    "OS-ZMM",
    "NEON", "DOTPROD", "SVE",
    "F16C",
};

/* The registry, config/isas.txt, as tables indexed by ml_build. */
#define ML_ISA_NAME_(isa, ISA, parent, archs, needs) #isa,
#define ML_ISA_PARENT_(isa, ISA, parent, archs, needs) #parent,
#define ML_ISA_ARCHS_(isa, ISA, parent, archs, needs) archs,
#define ML_ISA_NEEDS_(isa, ISA, parent, archs, needs) needs,
static const char *const build_names[ML_BUILD_COUNT] = {ML_ISAS(ML_ISA_NAME_)};
static const char *const build_parents[ML_BUILD_COUNT] = {ML_ISAS(ML_ISA_PARENT_)};
static const uint32_t build_archs[ML_BUILD_COUNT] = {ML_ISAS(ML_ISA_ARCHS_)};
static const uint32_t build_needs[ML_BUILD_COUNT] = {ML_ISAS(ML_ISA_NEEDS_)};

/* served_by[b][k]: the ISA whose code runs kernel k in build b (the chain,
 * walked by tools/isas.awk into ML_SERVED_<isa> of the generated header). */
#define ML_SERVED_ROW_(isa, ISA, parent, archs, needs) ML_SERVED_##isa,
static const char *const served_by[ML_BUILD_COUNT][ML_KERNEL_N] = {ML_ISAS(ML_SERVED_ROW_)};

ML_GUARD_FN const char *ml_cpu_feature_name(ml_cpu_feature f) {
    return (f >= 0 && f < ML_F_COUNT) ? feature_names[f] : "?";
}

ML_GUARD_FN const char *ml_build_name(ml_build b) {
    return (b >= 0 && b < ML_BUILD_COUNT) ? build_names[b] : "?";
}

ML_GUARD_FN int ml_build_from_name(const char *name) {
    for (int b = 0; b < ML_BUILD_COUNT; b++)
        if (strcmp(name, build_names[b]) == 0) return b;
    return -1;
}

ML_GUARD_FN const char *ml_build_parent(ml_build b) {
    return (b >= 0 && b < ML_BUILD_COUNT) ? build_parents[b] : "?";
}

ML_GUARD_FN ml_build ml_build_this(void) {
    int b = ml_build_from_name(ML_BUILD_THIS_NAME);
    return b < 0 ? ML_BUILD_SCALAR : (ml_build)b;
}

/* What a build executes: the features its own folder needs, and those of
 * every ISA that serves one of its kernels through the chain (config/isas.txt).
 * So avx512vnni needs AVX-VNNI only while some kernel still resolves to
 * kernels/avxvnni/ (VEX vpdpbusd, which Cascade Lake, Ice Lake and Zen 4 lack). */
#define F(x) ML_FBIT(ML_F_##x)
ML_GUARD_FN static uint32_t isa_requires(ml_build b) {
    if (b < 0 || b >= ML_BUILD_COUNT) return 0;
    uint32_t need = build_needs[b];
    for (int k = 0; k < ML_KERNEL_N; k++) {
        int s = ml_build_from_name(served_by[b][k]);
        if (s >= 0) need |= build_needs[s];
    }
    return need;
}

/* 32-bit x86 builds do their float math in SSE2 registers (x87 would round
 * differently; see the Makefile's M32), so every one of them, scalar
 * included, needs SSE2. On x86-64, SSE2 is the architecture's baseline. */
#if defined(__i386__) || defined(_M_IX86)
#define BASELINE_NEEDS F(SSE2)
#else
#define BASELINE_NEEDS 0
#endif
ML_GUARD_FN uint32_t ml_build_requires(ml_build b) {
    return BASELINE_NEEDS | isa_requires(b);
}

/* ==== read the host ======================================================= */

#if defined(ML_HOST_X86)
ML_GUARD_FN static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
#if defined(_MSC_VER)
    int v[4];
    __cpuidex(v, (int)leaf, (int)sub);
    for (int i = 0; i < 4; i++) r[i] = (uint32_t)v[i];
#else
    /* sub-leaf explicit: leaf 7 without ECX = 0 returns garbage on some CPUs */
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
#endif
}

/* XGETBV raises #UD unless CPUID.1:ECX.OSXSAVE is set; the caller checks.
 * Spelled as bytes so no -mxsave is needed. */
ML_GUARD_FN static uint64_t xgetbv0(void) {
#if defined(_MSC_VER)
    return _xgetbv(0);
#else
    uint32_t lo, hi;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
#endif
}
#endif

ML_GUARD_FN void ml_x86_read(ml_x86_regs *r) {
    memset(r, 0, sizeof *r);
#if defined(ML_HOST_X86)
    uint32_t v[4];
#if defined(_MSC_VER)
    cpuid(0, 0, v);
    r->max_leaf = v[0];
#else
    r->max_leaf = (uint32_t)__get_cpuid_max(0, NULL); /* 0 on an i386 without CPUID */
    if (r->max_leaf >= 1) cpuid(0, 0, v);
#endif
    if (r->max_leaf >= 1) {
        r->vendor[0] = v[1];
        r->vendor[1] = v[3];
        r->vendor[2] = v[2];
        cpuid(1, 0, v);
        r->l1_eax = v[0];
        r->l1_ecx = v[2];
        r->l1_edx = v[3];
    }
    if (r->max_leaf >= 7) {
        cpuid(7, 0, v);
        r->l7_eax = v[0];
        r->l7_ebx = v[1];
        r->l7_ecx = v[2];
        if (r->l7_eax >= 1) {
            cpuid(7, 1, v);
            r->l7s1_eax = v[0];
        }
    }
    if (r->l1_ecx & (UINT32_C(1) << 27)) r->xcr0 = xgetbv0();
#endif
}

/* ==== decode recorded registers =========================================== */

#define BIT(reg, n) (((reg) >> (n)) & 1u)

ML_GUARD_FN void ml_x86_decode(const ml_x86_regs *r, ml_cpu_features *f) {
    memset(f, 0, sizeof *f);
    f->arch = ML_ARCH_X86;
    f->detected = 1;
    uint32_t has = 0;
    if (r->max_leaf >= 1) {
        has |= BIT(r->l1_edx, 26) << ML_F_SSE2;
        has |= BIT(r->l1_ecx, 0) << ML_F_SSE3;
        has |= BIT(r->l1_ecx, 9) << ML_F_SSSE3;
        has |= BIT(r->l1_ecx, 19) << ML_F_SSE41;
        has |= BIT(r->l1_ecx, 12) << ML_F_FMA;
        has |= BIT(r->l1_ecx, 27) << ML_F_OSXSAVE;
        has |= BIT(r->l1_ecx, 28) << ML_F_AVX;
        has |= BIT(r->l1_ecx, 29) << ML_F_F16C;
    }
    if (r->max_leaf >= 7) {
        has |= BIT(r->l7_ebx, 5) << ML_F_AVX2;
        has |= BIT(r->l7_ebx, 16) << ML_F_AVX512F;
        has |= BIT(r->l7_ebx, 30) << ML_F_AVX512BW;
        has |= BIT(r->l7_ebx, 31) << ML_F_AVX512VL;
        has |= BIT(r->l7_ecx, 11) << ML_F_AVX512VNNI;
        if (r->l7_eax >= 1) has |= BIT(r->l7s1_eax, 4) << ML_F_AVXVNNI;
    }
    /* The OS must save the wider registers on a context switch: XCR0 bits 1,2
     * (SSE, AVX upper halves) and 5,6,7 (opmask, ZMM0-15 upper, ZMM16-31). */
    if (has & F(OSXSAVE)) {
        if ((r->xcr0 & 0x06) == 0x06) has |= F(OS_YMM);
        if ((r->xcr0 & 0xe0) == 0xe0) has |= F(OS_ZMM);
    }
    f->has = has;
    /* The vendor string (little-endian words EBX EDX ECX), named in the
     * report only if it is plain letters and digits (the JSON report does
     * not escape; a hypervisor may set any 12 bytes). The family: the
     * base one, plus the extended one when the base is 15. */
    char vendor[13] = "";
    int plain = r->max_leaf >= 1;
    for (int i = 0; i < 12 && plain; i++) {
        const char c = (char)(r->vendor[i / 4] >> (8 * (i % 4)));
        plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        vendor[i] = c;
    }
    if (!plain) vendor[0] = '\0';
    const uint32_t base = (r->l1_eax >> 8) & 0xF, family = base == 0xF ? base + ((r->l1_eax >> 20) & 0xFF) : base;
    /* core/tune.h's streaming: AMD family 25 is Zen 3 and Zen 4 */
    const int amd = strcmp(vendor, "AuthenticAMD") == 0;
    f->stream = amd && family >= 26 ? ML_STREAM_L1 : amd && family == 25 ? ML_STREAM_HW : ML_STREAM_L2;
    snprintf(f->source, sizeof f->source, "cpuid max leaf 0x%x, leaf 7 max sub-leaf %u, xcr0 0x%llx%s%s",
             (unsigned)r->max_leaf, (unsigned)(r->max_leaf >= 7 ? r->l7_eax : 0),
             (unsigned long long)((has & F(OSXSAVE)) ? r->xcr0 : 0), vendor[0] ? ", " : "", vendor);
}

/* Linux hwcap bits, defined here because older headers lack some. */
#define ML_HWCAP_ARM_NEON (1ul << 12)   /* ARM32 AT_HWCAP */
#define ML_HWCAP_A64_ASIMDDP (1ul << 20) /* AArch64 AT_HWCAP */
#define ML_HWCAP_A64_SVE (1ul << 22)     /* AArch64 AT_HWCAP */

ML_GUARD_FN void ml_arm_decode(int aarch64, unsigned long hwcap, unsigned long hwcap2,
                               ml_cpu_features *f) {
    memset(f, 0, sizeof *f);
    f->detected = 1;
    if (aarch64) {
        /* Advanced SIMD is mandatory in AArch64. dotprod has no reliable ARM32
         * hwcap, so DOTPROD and SVE are AArch64-only. */
        f->arch = ML_ARCH_AARCH64;
        f->has = F(NEON);
        if (hwcap & ML_HWCAP_A64_ASIMDDP) f->has |= F(DOTPROD);
        if (hwcap & ML_HWCAP_A64_SVE) f->has |= F(SVE);
    } else {
        f->arch = ML_ARCH_ARM32;
        if (hwcap & ML_HWCAP_ARM_NEON) f->has |= F(NEON);
    }
    snprintf(f->source, sizeof f->source, "getauxval AT_HWCAP 0x%lx, AT_HWCAP2 0x%lx", hwcap, hwcap2);
}

ML_GUARD_FN void ml_cpu_detect(ml_cpu_features *f) {
#if defined(ML_HOST_X86)
    ml_x86_regs r;
    ml_x86_read(&r);
    ml_x86_decode(&r, f);
#elif defined(ML_HOST_ARM_LINUX)
#ifndef AT_HWCAP2
#define AT_HWCAP2 26
#endif
#if defined(__aarch64__)
    ml_arm_decode(1, getauxval(AT_HWCAP), getauxval(AT_HWCAP2), f);
#else
    ml_arm_decode(0, getauxval(AT_HWCAP), getauxval(AT_HWCAP2), f);
#endif
#else
    /* No run-time detection (e.g. ARM outside Linux): trust the build. */
    memset(f, 0, sizeof *f);
#if defined(__aarch64__)
    f->arch = ML_ARCH_AARCH64;
#elif defined(__arm__)
    f->arch = ML_ARCH_ARM32;
#endif
    snprintf(f->source, sizeof f->source, "no run-time detection on this platform");
#endif
}

/* ==== decide ============================================================== */

ML_GUARD_FN static int build_arch_matches(ml_build b, ml_cpu_arch arch) {
    return (build_archs[b] >> arch) & 1u;
}

/* What b needs on CPU f: the 32-bit x86 baseline concerns x86 CPUs only (the
 * recorded ARM CPUs of the tests are decoded on any host). */
ML_GUARD_FN static uint32_t needs_on(ml_build b, const ml_cpu_features *f) {
    return f->arch == ML_ARCH_X86 ? ml_build_requires(b) : isa_requires(b);
}

ML_GUARD_FN static int can_run(ml_build b, const ml_cpu_features *f) {
    uint32_t need = needs_on(b, f);
    return (f->has & need) == need;
}

/* The registry lists each architecture's builds slowest first: the best is
 * the last one of this architecture that runs here. */
ML_GUARD_FN ml_build ml_best_build(const ml_cpu_features *f) {
    for (int b = ML_BUILD_COUNT - 1; b > ML_BUILD_SCALAR; b--)
        if (build_arch_matches((ml_build)b, f->arch) && can_run((ml_build)b, f)) return (ml_build)b;
    return ML_BUILD_SCALAR;
}

/* Bounded appending into buf; never overflows, always terminated. */
typedef struct { char *buf; size_t len, pos; } outbuf;

ML_PRINTF(2, 3)
ML_GUARD_FN static void put(outbuf *o, const char *fmt, ...) {
    if (o->len == 0 || o->pos >= o->len - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(o->buf + o->pos, o->len - o->pos, fmt, ap);
    va_end(ap);
    if (k > 0) o->pos = (o->pos + (size_t)k < o->len) ? o->pos + (size_t)k : o->len - 1;
}

/* OS register state is worth naming only when the CPU has the instructions;
 * "the OS does not save ZMM" on a CPU without AVX-512 is noise. */
ML_GUARD_FN static uint32_t missing_of(ml_build b, const ml_cpu_features *f) {
    uint32_t miss = needs_on(b, f) & ~f->has;
    if (!(f->has & F(AVX))) miss &= ~F(OS_YMM);
    if (!(f->has & F(AVX512F))) miss &= ~F(OS_ZMM);
    return miss;
}

ML_GUARD_FN static void put_features(outbuf *o, uint32_t set) {
    const char *sep = "";
    for (int i = 0; i < ML_F_COUNT; i++)
        if (set & ML_FBIT(i)) put(o, "%s%s", sep, feature_names[i]), sep = ", ";
}

/* A 32-bit x86 CPU without SSE2 (Pentium III, Athlon XP) runs no build at all. */
ML_GUARD_FN static void put_advice(outbuf *o, const ml_cpu_features *f) {
    ml_build best = ml_best_build(f);
    if (can_run(best, f))
        put(o, "Use the %s build (make ISA=%s).", build_names[best], build_names[best]);
    else
        put(o, "No legacy-ml build runs on this CPU (32-bit x86 builds need SSE2).");
}

ML_GUARD_FN ml_status ml_isa_check_for(ml_build b, const ml_cpu_features *f, ml_err *err) {
    if (!f->detected || can_run(b, f)) return ML_OK;
    if (!err) return ML_E_ISA;
    outbuf o = {err->msg, sizeof err->msg, 0};
    err->msg[0] = '\0';
    uint32_t miss = missing_of(b, f);
    const uint32_t os = F(OS_YMM) | F(OS_ZMM);
    put(&o, "legacy-ml: this binary was built for %s but ", build_names[b]);
    if (miss & ~os) {
        put(&o, "this CPU lacks: ");
        put_features(&o, miss & ~os);
        put(&o, "%s", (miss & os) ? "; and " : ". ");
    }
    if (miss & os) {
        put(&o, "the OS does not enable the register state (XCR0) for: ");
        put_features(&o, miss & os);
        put(&o, ". ");
    }
    put_advice(&o, f);
    return ML_E_ISA;
}

/* The builds of f's architecture that f runs, lowest first, sep between. */
ML_GUARD_FN static void put_runs(outbuf *o, const ml_cpu_features *f, const char *pre, const char *post,
                                 const char *sep) {
    const char *s = "";
    for (int i = 0; i < ML_BUILD_COUNT; i++)
        if (build_arch_matches((ml_build)i, f->arch) && can_run((ml_build)i, f))
            put(o, "%s%s%s%s", s, pre, build_names[i], post), s = sep;
}

ML_GUARD_FN void ml_isa_report_for(ml_build b, const ml_cpu_features *f, char *buf, size_t len) {
    static const char *const arch_names[] = {"unknown", "x86", "ARM32", "AArch64"};
    outbuf o = {buf, len, 0};
    if (len) buf[0] = '\0';
    put(&o, "legacy-ml CPU report\n");
    put(&o, "  this binary : %s build, needs: ", build_names[b]);
    if (ml_build_requires(b)) put_features(&o, ml_build_requires(b));
    else put(&o, "nothing beyond the baseline");
    put(&o, "\n  CPU         : %s (%s)\n", arch_names[f->arch], f->source);
    if (f->detected) {
        /* Each feature of this architecture, yes/no. */
        int lo = f->arch == ML_ARCH_X86 ? ML_F_SSE2 : ML_F_NEON;
        int hi = f->arch == ML_ARCH_X86 ? ML_F_OS_ZMM : ML_F_SVE;
        if (f->arch == ML_ARCH_ARM32) hi = ML_F_NEON;
        for (int i = lo; i <= hi; i++)
            put(&o, "    %-12s %s\n", feature_names[i], (f->has & ML_FBIT(i)) ? "yes" : "no");
        put(&o, "  runs here   : ");
        put_runs(&o, f, "", "", " ");
        put(&o, "\n  this build  : ");
        if (can_run(b, f)) {
            put(&o, "supported\n");
        } else {
            ml_err e;
            ml_isa_check_for(b, f, &e);
            put(&o, "NOT supported. %s\n", e.msg);
        }
        ml_build best = ml_best_build(f);
        if (can_run(best, f))
            put(&o, "  best build  : %s (make ISA=%s)\n", build_names[best], build_names[best]);
        else
            put(&o, "  best build  : none (32-bit x86 builds need SSE2)\n");
    } else {
        put(&o, "  this build  : assumed supported (no run-time detection here)\n");
    }
}

/* The same facts as one line of JSON, in a fixed layout the launcher reads
 * with sed (tools/ml.sh): keys in this order, no spaces, names that need no
 * escaping, source included (our own text: no quotes, no backslashes). "runs" is empty and
 * "best" null where nothing is detected or no build runs. */
ML_GUARD_FN void ml_isa_report_json_for(ml_build b, const ml_cpu_features *f, char *buf, size_t len) {
    static const char *const arch_names[] = {"unknown", "x86", "arm32", "aarch64"};
    outbuf o = {buf, len, 0};
    if (len) buf[0] = '\0';
    put(&o, "{\"arch\":\"%s\",\"detected\":%s,\"source\":\"%s\",\"features\":[", arch_names[f->arch],
        f->detected ? "true" : "false", f->source);
    const char *sep = "";
    for (int i = 0; i < ML_F_COUNT; i++)
        if (f->has & ML_FBIT(i)) put(&o, "%s\"%s\"", sep, feature_names[i]), sep = ",";
    put(&o, "],\"build\":\"%s\",\"needs\":[", build_names[b]);
    sep = "";
    for (int i = 0; i < ML_F_COUNT; i++)
        if (ml_build_requires(b) & ML_FBIT(i)) put(&o, "%s\"%s\"", sep, feature_names[i]), sep = ",";
    put(&o, "],\"supported\":%s,\"runs\":[", (!f->detected || can_run(b, f)) ? "true" : "false");
    ml_build best = ml_best_build(f);
    int any = f->detected && can_run(best, f);
    if (f->detected) put_runs(&o, f, "\"", "\"", ",");
    if (any) put(&o, "],\"best\":\"%s\"}\n", build_names[best]);
    else put(&o, "],\"best\":null}\n");
}

/* ==== the host ============================================================ */

ML_GUARD_FN ml_status ml_isa_check(ml_err *err) {
    ml_cpu_features f;
    ml_cpu_detect(&f);
    const ml_status s = ml_isa_check_for(ml_build_this(), &f, err);
    /* only now may this build's code run */
    if (s == ML_OK) ml_tune_stream(f.stream);
    return s;
}

ML_GUARD_FN void ml_isa_report(char *buf, size_t len) {
    ml_cpu_features f;
    ml_cpu_detect(&f);
    ml_isa_report_for(ml_build_this(), &f, buf, len);
}

ML_GUARD_FN void ml_isa_report_json(char *buf, size_t len) {
    ml_cpu_features f;
    ml_cpu_detect(&f);
    ml_isa_report_json_for(ml_build_this(), &f, buf, len);
}
