/* The ISA guard's decision logic on recorded CPUs: CPUID / XGETBV values and
 * Linux hwcaps as read on real hardware, qemu CPU models and valgrind, plus
 * hand-made corner cases (max leaf, sub-leaf count, OS register state).
 * Runs on any host: only ml_cpu_detect() touches the CPU. */
#include <string.h>

#include "config/ml_config.h"
#include "core/isa_check.h"
#include "core/tune.h"
#include "tests/testlib.h"

#define F(x) ML_FBIT(ML_F_##x)

/* {max_leaf, l1_ecx, l1_edx, l7_eax, l7_ebx, l7_ecx, l7s1_eax, xcr0, vendor, l1_eax};
 * the vendor words (leaf 0) and leaf 1 EAX recorded on the EPYC host only,
 * zeros where not recorded */
typedef struct { const char *name; ml_x86_regs r; } x86_cpu;

static const x86_cpu epyc = {"AMD EPYC host (AVX-512 + AVX-VNNI)",
    {0x1c, 0xfffa3203, 0x1f8bfbff, 0x2, 0xf1bf2ffb, 0x1a415f46, 0x00001c30, 0xe7,
     {0x68747541, 0x69746e65, 0x444d4163}, 0x00B00F21}};
static const x86_cpu qemu64 = {"qemu -cpu qemu64",
    {0xd, 0x80002001, 0x078bfbfd, 0x0, 0x0, 0x0, 0x0, 0x0, {0}, 0}};
static const x86_cpu core2duo = {"qemu -cpu core2duo",
    {0xa, 0x80002209, 0x0fcbfbfd, 0x0, 0x0, 0x0, 0x0, 0x0, {0}, 0}};
static const x86_cpu nehalem = {"qemu -cpu Nehalem",
    {0xb, 0x80982201, 0x078bfbfd, 0x0, 0x0, 0x0, 0x0, 0x0, {0}, 0}};
static const x86_cpu westmere = {"qemu -cpu Westmere",
    {0xb, 0x82982203, 0x078bfbfd, 0x0, 0x0, 0x0, 0x0, 0x0, {0}, 0}};
static const x86_cpu sandybridge = {"qemu -cpu SandyBridge",
    {0xd, 0x9e982203, 0x078bfbfd, 0x0, 0x0, 0x0, 0x0, 0x7, {0}, 0}};
static const x86_cpu haswell = {"qemu -cpu Haswell",
    {0xd, 0xfed83203, 0x078bfbfd, 0x0, 0x000003a9, 0x0, 0x0, 0x7, {0}, 0}};
static const x86_cpu qmax = {"qemu -cpu max",
    {0xd, 0xfed8320b, 0x0fcbfbfd, 0x0, 0x01d843a9, 0x8001020c, 0x0, 0x21f, {0}, 0}};
static const x86_cpu qmax_nofma = {"qemu -cpu max,-fma",
    {0xd, 0xfed8220b, 0x0fcbfbfd, 0x0, 0x01d843a9, 0x8001020c, 0x0, 0x21f, {0}, 0}};
static const x86_cpu pentium3 = {"qemu-i386 -cpu pentium3 (SSE, no SSE2)",
    {0x3, 0x80000000, 0x0383fbfd, 0x0, 0x0, 0x0, 0x0, 0x0, {0}, 0}};
static const x86_cpu valgrind = {"valgrind on the EPYC host",
    {0xd, 0x7ffafbff, 0xbfebfbff, 0x0, 0x000427aa, 0x0, 0x0, 0x7, {0}, 0}};

static ml_cpu_features x86(const x86_cpu *c) {
    ml_cpu_features f;
    ml_x86_decode(&c->r, &f);
    return f;
}

/* Message of a refusal ("" when the build is accepted). */
static const char *verdict(ml_build b, const ml_cpu_features *f, ml_status *st) {
    static ml_err e;
    e.msg[0] = '\0';
    *st = ml_isa_check_for(b, f, &e);
    return e.msg;
}

static int has_word(const char *msg, const char *word) {  /* word, not a prefix of one */
    size_t n = strlen(word);
    for (const char *p = strstr(msg, word); p; p = strstr(p + 1, word)) {
        char before = p == msg ? ' ' : p[-1], after = p[n];
        if ((before == ' ' || before == ':') && (after == ',' || after == '.' || after == ';'))
            return 1;
    }
    return 0;
}

/* Build b on cpu c: accepted (accept=1) or refused naming exactly `named`
 * (a comma list: all of them and no other feature) and suggesting best. */
static void expect(const x86_cpu *c, ml_cpu_features f, ml_build b, int accept, const char *named,
                   ml_build best) {
    ml_status st;
    const char *msg = verdict(b, &f, &st);
    if (accept) {
        CHECK(st == ML_OK, "%s: %s build should run, got: %s", c->name, ml_build_name(b), msg);
        return;
    }
    CHECK(st == ML_E_ISA, "%s: %s build should be refused", c->name, ml_build_name(b));
    CHECK(strstr(msg, ml_build_name(b)) != NULL, "%s: message names the build: %s", c->name, msg);
    /* every expected feature named, and no other feature named */
    char list[160] = ",";  /* "AVX, FMA" -> ",AVX,FMA," */
    size_t n = 1;
    for (const char *p = named; *p && n < sizeof list - 2; p++)
        if (*p != ' ') list[n++] = *p;
    list[n++] = ',', list[n] = '\0';
    for (int i = 0; i < ML_F_COUNT; i++) {
        const char *fn = ml_cpu_feature_name((ml_cpu_feature)i);
        char want[32];
        snprintf(want, sizeof want, ",%s,", fn);
        int expected = strstr(list, want) != NULL;
        CHECK(has_word(msg, fn) == expected, "%s, %s build: %s %s be named in: %s", c->name,
              ml_build_name(b), fn, expected ? "must" : "must not", msg);
    }
    char advice[64];
    snprintf(advice, sizeof advice, "Use the %s build (make ISA=%s).", ml_build_name(best),
             ml_build_name(best));
    CHECK(strstr(msg, advice) != NULL, "%s: advice '%s' in: %s", c->name, advice, msg);
    CHECK(ml_best_build(&f) == best, "%s: best build %s, got %s", c->name, ml_build_name(best),
          ml_build_name(ml_best_build(&f)));
}

/* Same arguments for a CPU whose register file is given by value. */
static void expect_regs(const char *name, ml_x86_regs r, ml_build b, int accept, const char *named,
                        ml_build best) {
    x86_cpu c = {name, r};
    expect(&c, x86(&c), b, accept, named, best);
}

/* Does the avx512vnni build link avxvnni kernels (see core/isa_check.c)? */
#define USES_(ret, name, NAME, params) || (!ML_HAS_##NAME##_AVX512VNNI && ML_HAS_##NAME##_AVXVNNI)
static const int avx512_uses_avxvnni = 0 ML_KERNELS(USES_);

static void test_decode_recorded(void) {
    int before = tl_failed;
    ml_cpu_features f = x86(&epyc);
    uint32_t all = 0;
    for (int i = ML_F_SSE2; i <= ML_F_OS_ZMM; i++) all |= ML_FBIT(i);
    all |= ML_FBIT(ML_F_F16C);
    CHECK(f.arch == ML_ARCH_X86 && f.detected, "EPYC decodes as detected x86");
    CHECK(f.has == all, "EPYC has every x86 feature: 0x%x vs 0x%x", (unsigned)f.has, (unsigned)all);
    f = x86(&qemu64);
    CHECK(f.has == (F(SSE2) | F(SSE3)), "qemu64: SSE2+SSE3 only, got 0x%x", (unsigned)f.has);
    f = x86(&core2duo);
    CHECK(f.has == (F(SSE2) | F(SSE3) | F(SSSE3)), "core2duo: up to SSSE3, got 0x%x", (unsigned)f.has);
    f = x86(&qmax);
    CHECK((f.has & (F(AVX2) | F(FMA) | F(OS_YMM))) == (F(AVX2) | F(FMA) | F(OS_YMM)),
          "qemu max: AVX2, FMA, OS-YMM");
    CHECK(!(f.has & (F(AVX512F) | F(AVXVNNI) | F(OS_ZMM))), "qemu max: no AVX-512, no AVX-VNNI");
    f = x86(&valgrind);
    CHECK((f.has & F(AVX2)) && !(f.has & (F(AVX512F) | F(AVXVNNI))), "valgrind: AVX2, no AVX-512/AVX-VNNI");
    GROUP_DONE("decode recorded x86 CPUs", before);
}

static void test_decode_rules(void) {
    int before = tl_failed;
    ml_x86_regs r = epyc.r;
    ml_cpu_features f;

    /* leaf 7 fields are ignored when max leaf < 7, whatever they hold */
    r.max_leaf = 6;
    ml_x86_decode(&r, &f);
    CHECK(!(f.has & (F(AVX2) | F(AVX512F) | F(AVXVNNI))), "max leaf 6: no leaf-7 features");
    CHECK(f.has & F(SSE41), "max leaf 6: leaf 1 still read");
    /* nothing at all without leaf 1 */
    r.max_leaf = 0;
    ml_x86_decode(&r, &f);
    CHECK(f.has == 0, "max leaf 0: no features, got 0x%x", (unsigned)f.has);
    /* sub-leaf 1 only if leaf 7 sub-leaf 0 EAX >= 1 */
    r = epyc.r;
    r.l7_eax = 0;
    ml_x86_decode(&r, &f);
    CHECK(!(f.has & F(AVXVNNI)) && (f.has & F(AVX512VNNI)), "leaf 7 EAX 0: sub-leaf 1 ignored");
    /* XCR0 is trusted only with OSXSAVE */
    r = epyc.r;
    r.l1_ecx &= ~(UINT32_C(1) << 27);
    ml_x86_decode(&r, &f);
    CHECK(!(f.has & (F(OS_YMM) | F(OS_ZMM) | F(OSXSAVE))), "no OSXSAVE: xcr0 ignored");
    /* partial XCR0: YMM needs bits 1 and 2, ZMM bits 5, 6 and 7 */
    r = epyc.r;
    r.xcr0 = 0x3;
    ml_x86_decode(&r, &f);
    CHECK(!(f.has & F(OS_YMM)), "xcr0 0x3: no YMM state");
    r.xcr0 = 0x67;
    ml_x86_decode(&r, &f);
    CHECK((f.has & F(OS_YMM)) && !(f.has & F(OS_ZMM)), "xcr0 0x67: YMM but no ZMM state");
    GROUP_DONE("decode rules: max leaf, sub-leaf count, OSXSAVE/XCR0", before);
}

/* Vendor (leaf 0: EBX EDX ECX, little-endian) and family (leaf 1 EAX) pick
 * the kernels' streaming (core/tune.h): into L1 on AMD family 26 and later,
 * the hardware prefetchers alone on family 25, into L2 on anything else;
 * the features do not depend on them, and the report names only a plain
 * vendor string (the JSON report does not escape). */
static void test_vendor(void) {
    int before = tl_failed;
    /* leaf 1 EAX: family 26, 25, 23, 6 */
    enum { ZEN5 = 0x00B00F21, ZEN4 = 0x00A10F11, ZEN2 = 0x00830F10, SKYLAKE = 0x00050654 };
    enum { L2 = ML_STREAM_L2, L1 = ML_STREAM_L1, HW = ML_STREAM_HW };
    static const struct { const char *name; uint32_t w[3]; uint32_t eax; int stream; const char *named; } cpus[] = {
        {"AuthenticAMD, Zen 5", {0x68747541, 0x69746e65, 0x444d4163}, ZEN5, L1, "AuthenticAMD"},
        {"AuthenticAMD, Zen 4", {0x68747541, 0x69746e65, 0x444d4163}, ZEN4, HW, "AuthenticAMD"},
        {"AuthenticAMD, Zen 2", {0x68747541, 0x69746e65, 0x444d4163}, ZEN2, L2, "AuthenticAMD"},
        {"HygonGenuine", {0x6f677948, 0x6e65476e, 0x656e6975}, ZEN5, L2, "HygonGenuine"},
        {"GenuineIntel", {0x756e6547, 0x49656e69, 0x6c65746e}, SKYLAKE, L2, "GenuineIntel"},
        {"a quote in the vendor", {0x68747541, 0x69746e65, 0x444d4122}, ZEN5, L2, NULL},
        {"no vendor", {0, 0, 0}, ZEN5, L2, NULL},
    };
    ml_cpu_features plain;
    ml_x86_decode(&epyc.r, &plain);
    for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++) {
        ml_x86_regs r = epyc.r;
        memcpy(r.vendor, cpus[i].w, sizeof r.vendor);
        r.l1_eax = cpus[i].eax;
        ml_cpu_features f;
        ml_x86_decode(&r, &f);
        CHECK(f.stream == cpus[i].stream, "%s: streaming %d, got %d", cpus[i].name, cpus[i].stream, f.stream);
        CHECK(f.has == plain.has, "%s: the features do not change", cpus[i].name);
        if (cpus[i].named)
            CHECK(strstr(f.source, cpus[i].named) != NULL, "%s: source names it: %s", cpus[i].name, f.source);
        else
            CHECK(!strchr(f.source, '"') && !strstr(f.source, "Auth"), "%s: source names no vendor: %s",
                  cpus[i].name, f.source);
    }
    /* max leaf 0: the vendor words are not trusted either */
    ml_x86_regs r = epyc.r;
    r.max_leaf = 0;
    ml_cpu_features f;
    ml_x86_decode(&r, &f);
    CHECK(f.stream == ML_STREAM_L2 && !strstr(f.source, "AMD"), "max leaf 0: no vendor: %s", f.source);
    GROUP_DONE("vendor and family: L1 streaming for AMD family 26 on, hardware for 25, L2 otherwise; a plain "
               "vendor name",
               before);
}

static void test_x86_verdicts(void) {
    int before = tl_failed;
    const ml_build SC = ML_BUILD_SCALAR, S2 = ML_BUILD_SSE2, S41 = ML_BUILD_SSE41,
                   A2 = ML_BUILD_AVX2, AV = ML_BUILD_AVXVNNI, A5 = ML_BUILD_AVX512VNNI;
    /* every x86 build runs on the host it was recorded on */
    for (ml_build b = SC; b <= A5; b++) expect(&epyc, x86(&epyc), b, 1, "", A5);
    expect(&qemu64, x86(&qemu64), S2, 1, "", S2);
    expect(&qemu64, x86(&qemu64), S41, 0, "SSSE3, SSE4.1", S2);
    expect(&core2duo, x86(&core2duo), S41, 0, "SSE4.1", S2);
    expect(&nehalem, x86(&nehalem), S41, 1, "", S41);
    expect(&westmere, x86(&westmere), A2, 0, "AVX, FMA, AVX2, F16C", S41);
    expect(&sandybridge, x86(&sandybridge), A2, 0, "FMA, AVX2, F16C", S41);
    expect(&haswell, x86(&haswell), A2, 1, "", A2);
    expect(&haswell, x86(&haswell), AV, 0, "AVX-VNNI", A2);
    expect(&qmax, x86(&qmax), A2, 1, "", A2);
    expect(&qmax_nofma, x86(&qmax_nofma), A2, 0, "FMA", S41);
    expect(&qmax, x86(&qmax), AV, 0, "AVX-VNNI", A2);
    expect(&qmax, x86(&qmax), A5, 0,
           avx512_uses_avxvnni ? "AVX-VNNI, AVX-512F, AVX-512BW, AVX-512VL, AVX-512VNNI"
                               : "AVX-512F, AVX-512BW, AVX-512VL, AVX-512VNNI", A2);
    expect(&valgrind, x86(&valgrind), A2, 1, "", A2);
    expect(&valgrind, x86(&valgrind), AV, 0, "AVX-VNNI", A2);
    expect(&valgrind, x86(&valgrind), A5, 0,
           avx512_uses_avxvnni ? "AVX-VNNI, AVX-512F, AVX-512BW, AVX-512VL, AVX-512VNNI"
                               : "AVX-512F, AVX-512BW, AVX-512VL, AVX-512VNNI", A2);

    /* Cascade Lake / Ice Lake / Zen 4: AVX-512 VNNI without AVX-VNNI */
    ml_x86_regs r = epyc.r;
    r.l7s1_eax &= ~(UINT32_C(1) << 4);
    expect_regs("AVX-512 VNNI without AVX-VNNI", r, AV, 0, "AVX-VNNI",
                avx512_uses_avxvnni ? A2 : A5);
    /* an OS that does not save YMM: the CPU has AVX, so the OS state is named */
    r = epyc.r;
    r.xcr0 = 0x3;
    expect_regs("OS without AVX state", r, A2, 0, "OS-YMM", S41);
    /* an OS that saves YMM but not ZMM */
    r.xcr0 = 0x7;
    expect_regs("OS without AVX-512 state", r, A5, 0, "OS-ZMM", AV);
    GROUP_DONE("x86 verdicts: accept, refuse naming every missing feature, advice", before);
}

/* A CPU without SSE2: on x86-64 it cannot exist; a 32-bit build needs SSE2
 * in every build (its float math), so it runs nothing and says so. */
static void test_no_sse2(void) {
    int before = tl_failed;
    ml_cpu_features f = x86(&pentium3);
    ml_status st;
    CHECK(f.has == 0, "pentium3 decodes with no feature we use, got 0x%x", (unsigned)f.has);
    const char *msg = verdict(ML_BUILD_SSE2, &f, &st);
    CHECK(st == ML_E_ISA && has_word(msg, "SSE2"), "pentium3: sse2 build refused naming SSE2: %s", msg);
    msg = verdict(ML_BUILD_SCALAR, &f, &st);
#if defined(__i386__) || defined(_M_IX86)
    CHECK(st == ML_E_ISA && has_word(msg, "SSE2") &&
          strstr(msg, "No legacy-ml build runs on this CPU (32-bit x86 builds need SSE2)."),
          "32-bit scalar build refused on pentium3 naming SSE2, no build advised: %s", msg);
    char buf[2048];
    ml_isa_report_for(ML_BUILD_SCALAR, &f, buf, sizeof buf);
    CHECK(strstr(buf, "needs: SSE2\n") && strstr(buf, "runs here   : \n") &&
          strstr(buf, "best build  : none (32-bit x86 builds need SSE2)\n"), "pentium3 report:\n%s", buf);
#else
    CHECK(st == ML_OK, "64-bit scalar build needs nothing beyond x86-64: %s", msg);
#endif
    GROUP_DONE("no SSE2 (Pentium III): refusals and advice for this word size", before);
}

static void test_messages(void) {
    int before = tl_failed;
    ml_cpu_features f = x86(&westmere);
    ml_err e;
    ml_isa_check_for(ML_BUILD_AVX2, &f, &e);
    CHECK(strcmp(e.msg, "legacy-ml: this binary was built for avx2 but this CPU lacks: AVX, FMA, "
                        "AVX2, F16C. Use the sse41 build (make ISA=sse41).") == 0, "exact message: %s", e.msg);
    ml_x86_regs r = epyc.r;
    r.xcr0 = 0x3;
    ml_x86_decode(&r, &f);
    ml_isa_check_for(ML_BUILD_AVX2, &f, &e);
    CHECK(strstr(e.msg, "OS does not enable") && strstr(e.msg, "OS-YMM") && !strstr(e.msg, "CPU lacks"),
          "OS-only message: %s", e.msg);
    CHECK(ml_isa_check_for(ML_BUILD_AVX2, &f, NULL) == ML_E_ISA, "NULL err still refuses");

    /* the report: each feature yes/no, this build, the best build */
    char buf[2048];
    f = x86(&westmere);
    ml_isa_report_for(ML_BUILD_AVX2, &f, buf, sizeof buf);
    CHECK(strstr(buf, "SSE4.1       yes") && strstr(buf, "AVX2         no"), "report lists features:\n%s", buf);
    CHECK(strstr(buf, "avx2 build") && strstr(buf, "NOT supported") &&
          strstr(buf, "best build  : sse41 (make ISA=sse41)") &&
          strstr(buf, "runs here   : scalar sse2 sse41\n"), "report verdict:\n%s", buf);
    /* bounded output: never writes past len, always terminated */
    char small[24];
    memset(small, 'x', sizeof small);
    ml_isa_report_for(ML_BUILD_AVX2, &f, small, 16);
    CHECK(strlen(small) == 15 && small[16] == 'x', "report truncates at len");
    ml_isa_report_for(ML_BUILD_AVX2, &f, small, 0);
    CHECK(small[0] == 'l', "len 0 writes nothing");
    GROUP_DONE("refusal message and report text", before);
}

static void test_arm(void) {
    int before = tl_failed;
    ml_cpu_features f;
    const ml_build NE = ML_BUILD_NEON, DP = ML_BUILD_NEON_DOTPROD, SV = ML_BUILD_SVE;
    ml_status st;
    /* hwcaps read under qemu-aarch64 / qemu-arm */
    ml_arm_decode(1, 0x8fb, 0, &f);              /* cortex-a53 */
    CHECK(f.has == F(NEON), "a53: NEON only");
    CHECK(ml_isa_check_for(NE, &f, NULL) == ML_OK, "a53 runs neon");
    const char *m = verdict(DP, &f, &st);
    CHECK(st == ML_E_ISA && has_word(m, "DOTPROD") && strstr(m, "make ISA=neon)"), "a53 refuses dotprod: %s", m);
    ml_arm_decode(1, 0x119ffb, 0, &f);           /* cortex-a76 */
    CHECK(ml_isa_check_for(DP, &f, NULL) == ML_OK, "a76 runs neon_dotprod");
    m = verdict(SV, &f, &st);
    CHECK(st == ML_E_ISA && has_word(m, "SVE") && !has_word(m, "DOTPROD") && strstr(m, "ISA=neon_dotprod)"),
          "a76 refuses sve: %s", m);
    ml_arm_decode(1, 0xecfffffb, 0x7f877fff, &f); /* max */
    CHECK(ml_isa_check_for(SV, &f, NULL) == ML_OK && ml_best_build(&f) == SV, "max runs sve");
    ml_arm_decode(1, 0xecbffffb, 0x76181, &f);   /* max,sve=off */
    CHECK(ml_isa_check_for(SV, &f, NULL) == ML_E_ISA && ml_best_build(&f) == DP, "max,sve=off refuses sve");
    ml_arm_decode(1, 0x415ffb, 0, &f);           /* a64fx: SVE without dotprod */
    m = verdict(SV, &f, &st);
    CHECK(st == ML_E_ISA && has_word(m, "DOTPROD") && !has_word(m, "SVE"), "a64fx: sve build needs dotprod: %s", m);
    ml_arm_decode(0, 0x1fb8d7, 0, &f);           /* ARMv7 cortex-a15 */
    CHECK(f.arch == ML_ARCH_ARM32 && ml_isa_check_for(NE, &f, NULL) == ML_OK, "a15 runs neon");
    ml_arm_decode(0, 0x1fa8d7, 0, &f);           /* cortex-a15,neon=off */
    m = verdict(NE, &f, &st);
    CHECK(st == ML_E_ISA && has_word(m, "NEON") && strstr(m, "make ISA=scalar)"), "a15 neon=off refuses: %s", m);
    ml_arm_decode(0, 0x1fb8d7, 0, &f);           /* dotprod is AArch64-only */
    CHECK(ml_isa_check_for(DP, &f, NULL) == ML_E_ISA, "ARM32 refuses neon_dotprod");
    GROUP_DONE("ARM hwcap decode and verdicts", before);
}

static void test_tables(void) {
    int before = tl_failed;
    for (int b = 0; b < ML_BUILD_COUNT; b++)
        CHECK(ml_build_from_name(ml_build_name((ml_build)b)) == b, "build name round trip %d", b);
    CHECK(ml_build_from_name("avx3") == -1, "unknown build name");
    CHECK(strcmp(ml_build_name(ml_build_this()), ML_ISA_NAME) == 0, "this build is %s", ML_ISA_NAME);
    /* each build needs at least what the build below it in the chain needs */
    static const ml_build chain[][2] = {
        {ML_BUILD_SSE2, ML_BUILD_SSE41}, {ML_BUILD_SSE41, ML_BUILD_AVX2}, {ML_BUILD_AVX2, ML_BUILD_AVXVNNI},
        {ML_BUILD_AVX2, ML_BUILD_AVX512VNNI}, {ML_BUILD_NEON, ML_BUILD_NEON_DOTPROD},
        {ML_BUILD_NEON_DOTPROD, ML_BUILD_SVE}};
    for (size_t i = 0; i < sizeof chain / sizeof *chain; i++) {
        uint32_t lo = ml_build_requires(chain[i][0]), hi = ml_build_requires(chain[i][1]);
        CHECK((lo & hi) == lo, "%s needs all that %s needs", ml_build_name(chain[i][1]), ml_build_name(chain[i][0]));
    }
    CHECK(!!(ml_build_requires(ML_BUILD_AVX512VNNI) & F(AVXVNNI)) == avx512_uses_avxvnni,
          "avx512vnni needs AVX-VNNI iff a kernel falls back to kernels/avxvnni");
    GROUP_DONE("build tables", before);
}

/* The host: whatever it is, the guard let this binary start, so the check
 * must pass, and the report must describe it. */
static void test_host(void) {
    int before = tl_failed;
    ml_err e;
    CHECK(ml_isa_check(&e) == ML_OK, "host check passes in a running binary");
    ml_cpu_features f;
    ml_cpu_detect(&f);
    CHECK(ml_stream() == f.stream, "the check tuned the kernels for this CPU: %d, wanted %d", ml_stream(), f.stream);
    /* a setting by hand (ml_bench --prefetch) survives the next check (a model's open) */
    const int other = f.stream == ML_STREAM_HW ? ML_STREAM_L1 : ML_STREAM_HW;
    ml_set_stream(other);
    CHECK(ml_isa_check(&e) == ML_OK && ml_stream() == other, "the check kept the setting by hand");
    char buf[2048];
    ml_isa_report(buf, sizeof buf);
    CHECK(strstr(buf, "this build  : supported") || strstr(buf, "assumed supported"), "host report:\n%s", buf);
    GROUP_DONE("host detection", before);
}

/* ---- --cpu-info --json ---------------------------------------------------
 * A validator for the JSON subset the report writes (objects, arrays, strings
 * without escapes, true, false, null): returns the end of the value or NULL. */
static const char *json_value(const char *p);
static const char *json_string(const char *p) {
    if (*p++ != '"') return NULL;
    while (*p && *p != '"') {
        if (*p == '\\' || (unsigned char)*p < 0x20) return NULL;
        p++;
    }
    return *p == '"' ? p + 1 : NULL;
}
static const char *json_list(const char *p, char close, int keyed) {
    p++;
    if (*p == close) return p + 1;
    for (;;) {
        if (keyed && (!(p = json_string(p)) || *p++ != ':')) return NULL;
        if (!(p = json_value(p))) return NULL;
        if (*p == close) return p + 1;
        if (*p++ != ',') return NULL;
    }
}
static const char *json_value(const char *p) {
    static const char *const words[] = {"true", "false", "null"};
    if (*p == '{') return json_list(p, '}', 1);
    if (*p == '[') return json_list(p, ']', 0);
    if (*p == '"') return json_string(p);
    for (int i = 0; i < 3; i++)
        if (!strncmp(p, words[i], strlen(words[i]))) return p + strlen(words[i]);
    return NULL;
}

/* The raw text of key's value in the one-line object ("" if absent). */
static const char *json_field(const char *json, const char *key, char *out, size_t len) {
    char k[32];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(json, k), *end;
    out[0] = '\0';
    if (!p || !(end = json_value(p += strlen(k))) || (size_t)(end - p) >= len) return out;
    memcpy(out, p, (size_t)(end - p));
    out[end - p] = '\0';
    return out;
}

/* A JSON list of names as the prose writes it: ["a","b"] -> "a b". */
static const char *json_words(const char *list, char *out, size_t len) {
    size_t n = 0;
    for (const char *p = list; *p && n + 1 < len; p++)
        if (*p == ',') out[n++] = ' ';
        else if (*p != '"' && *p != '[' && *p != ']') out[n++] = *p;
    out[n] = '\0';
    return out;
}

/* The prose line "  <label>: rest" of a report, rest up to the newline. */
static const char *prose_line(const char *report, const char *label, char *out, size_t len) {
    const char *p = strstr(report, label), *e;
    out[0] = '\0';
    if (!p) return out;
    p += strlen(label);
    e = strchr(p, '\n');
    if (!e || (size_t)(e - p) >= len) return out;
    memcpy(out, p, (size_t)(e - p));
    out[e - p] = '\0';
    return out;
}

/* Build b on CPU f: the JSON report is one valid line with every key, in the
 * fixed order the launcher's sed relies on, and says what the prose says. */
static void json_agrees(const char *cpu, ml_build b, const ml_cpu_features *f) {
    static const char *const keys[] = {"arch", "detected", "source", "features", "build", "needs",
                                       "supported", "runs", "best"};
    char js[2048], prose[2048], v[512], w[512], pl[256];
    ml_isa_report_json_for(b, f, js, sizeof js);
    ml_isa_report_for(b, f, prose, sizeof prose);
    const char *bn = ml_build_name(b), *end = json_value(js);
    CHECK(end && !strcmp(end, "\n") && js[0] == '{', "%s, %s: not one line of valid JSON: %s", cpu, bn, js);
    const char *at = js;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        char k[32];
        snprintf(k, sizeof k, "\"%s\":", keys[i]);
        const char *p = strstr(js, k);
        CHECK(p && p > at, "%s, %s: key %s missing or out of order: %s", cpu, bn, keys[i], js);
        if (p) at = p;
    }
    snprintf(pl, sizeof pl, "\"%s\"", bn);
    CHECK(!strcmp(json_field(js, "build", v, sizeof v), pl), "%s: build %s, JSON says %s", cpu, bn, v);
    json_field(js, "features", v, sizeof v);
    for (int i = 0; i < ML_F_COUNT; i++) {
        snprintf(pl, sizeof pl, "\"%s\"", ml_cpu_feature_name((ml_cpu_feature)i));
        CHECK(!!strstr(v, pl) == !!(f->has & ML_FBIT(i)), "%s, %s: feature %s in %s", cpu, bn, pl, v);
    }
    json_words(json_field(js, "runs", v, sizeof v), w, sizeof w);
    if (f->detected) {
        CHECK(!strcmp(w, prose_line(prose, "  runs here   : ", pl, sizeof pl)),
              "%s, %s: JSON runs '%s', the report '%s'", cpu, bn, w, pl);
        prose_line(prose, "  best build  : ", pl, sizeof pl);
        char *sp = strchr(pl, ' ');
        if (sp) *sp = '\0';
        json_field(js, "best", v, sizeof v);
        if (!strcmp(pl, "none")) CHECK(!strcmp(v, "null"), "%s, %s: no best build, JSON best %s", cpu, bn, v);
        else CHECK(!strcmp(json_words(v, w, sizeof w), pl), "%s, %s: JSON best %s, the report %s", cpu, bn, v, pl);
        int sup = strstr(prose, "  this build  : supported\n") != NULL;
        CHECK(!strcmp(json_field(js, "supported", v, sizeof v), sup ? "true" : "false"),
              "%s, %s: supported %s, the report %s", cpu, bn, v, sup ? "supported" : "NOT supported");
    } else {
        CHECK(!strcmp(w, "") && !strcmp(json_field(js, "best", v, sizeof v), "null") &&
              !strcmp(json_field(js, "detected", pl, sizeof pl), "false"),
              "%s, %s: nothing detected, yet: %s", cpu, bn, js);
    }
}

static void test_json(void) {
    int before = tl_failed;
    /* the validator itself: accepts the subset, refuses what is not JSON */
    CHECK(json_value("{\"a\":[\"b\",true,null],\"c\":{}}") && !json_value("{\"a\":}") &&
          !json_value("{\"a\":[\"b\",]}") && !json_value("{\"a\" 1}") && !json_value("[\"a]"),
          "the JSON validator accepts and refuses as it should");
    const x86_cpu *cpus[] = {&epyc, &qemu64, &core2duo, &nehalem, &westmere, &sandybridge, &haswell,
                             &qmax, &qmax_nofma, &pentium3, &valgrind};
    for (size_t i = 0; i < sizeof cpus / sizeof *cpus; i++) {
        ml_cpu_features f = x86(cpus[i]);
        for (int b = 0; b < ML_BUILD_COUNT; b++) json_agrees(cpus[i]->name, (ml_build)b, &f);
    }
    static const struct { const char *name; int a64; unsigned long hwcap, hwcap2; } arm[] = {
        {"cortex-a53", 1, 0x8fb, 0}, {"cortex-a76", 1, 0x119ffb, 0}, {"max", 1, 0xecfffffb, 0x7f877fff},
        {"cortex-a15", 0, 0x1fb8d7, 0}, {"cortex-a15,neon=off", 0, 0x1fa8d7, 0}};
    for (size_t i = 0; i < sizeof arm / sizeof *arm; i++) {
        ml_cpu_features f;
        ml_arm_decode(arm[i].a64, arm[i].hwcap, arm[i].hwcap2, &f);
        for (int b = 0; b < ML_BUILD_COUNT; b++) json_agrees(arm[i].name, (ml_build)b, &f);
    }
    ml_cpu_features none = {ML_ARCH_AARCH64, 0, 0, "no run-time detection on this platform", 0};
    json_agrees("undetected", ML_BUILD_SCALAR, &none);
    ml_cpu_features f;
    ml_cpu_detect(&f);
    json_agrees("this host", ml_build_this(), &f);
    /* the exact line of one CPU (tools/ml.sh and tools/pick_isa.sh read it with sed) */
    char js[2048];
    f = x86(&westmere);
    ml_isa_report_json_for(ML_BUILD_AVX2, &f, js, sizeof js);
    CHECK(strstr(js, "\"features\":[\"SSE2\",\"SSE3\",\"SSSE3\",\"SSE4.1\"],\"build\":\"avx2\"") &&
          strstr(js, "\"supported\":false,\"runs\":[\"scalar\",\"sse2\",\"sse41\"],\"best\":\"sse41\"}\n"),
          "westmere, avx2: %s", js);
    GROUP_DONE("--cpu-info --json: one valid line, every key in order, as the report says", before);
}

int ml_main(int argc, char **argv) {
    (void)argc, (void)argv;
    test_decode_recorded();
    test_decode_rules();
    test_vendor();
    test_x86_verdicts();
    test_no_sse2();
    test_messages();
    test_arm();
    test_tables();
    test_json();
    test_host();
    return tl_summary();
}
