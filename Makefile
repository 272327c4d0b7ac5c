# legacy-ml — `make help` lists the targets.
#   make ISA=<isa> [THREADS=pthread|1] [ASM=0|1] [CROSS=<prefix>] [DEBUG=0|1] [ML_NO_MMAP=1] [SAN=1] [STATIC=1] [M32=1] [V=1]

# `make run` (and lib, install, bench) without ISA (or with ISA=auto) picks the best build this CPU
# runs; everything else defaults to scalar, which is also auto's probe.
# `make` alone (goal best) does the same for every program, and links
# build/best to that build's folder.
RUN_ISA  := $(or $(ISA),auto)
ifeq ($(ISA),auto)
ifneq ($(filter-out run best bench lib install,$(MAKECMDGOALS)),)
$(error ISA=auto is for `make`, `make run`, `make bench`, `make lib` and `make install` only; other targets need one (make help))
endif
override ISA := scalar
endif
ISA      ?= scalar
# The thread pool (-t N) is on by default; THREADS=1 builds without it (no
# pthreads on the system, or the smallest binary), into build/<isa>-nothreads/.
THREADS  ?= pthread
ASM      ?= 0
DEBUG    ?= 0
SAN      ?= 0
STATIC   ?= 0
M32      ?= 0
CROSS    ?=
CC       := $(if $(filter default,$(origin CC)),$(CROSS)gcc,$(CC))
PYTHON   ?= $(shell for p in python3 /usr/bin/python3; do $$p -c 'import numpy' 2>/dev/null && echo $$p && break; done)
MODELS   ?= ../shared/models

# ---- output: one short line per file or program ("  CC  core/arena.c",
# "  LD  build/avx2/ml_run"), as the Linux kernel does; V=1 prints the
# commands instead, make -s neither. Compiler warnings show either way. ----
V        ?= 0
SILENT   := $(findstring s,$(firstword -$(MAKEFLAGS)))
Q        := $(if $(filter 1,$(V)),,@)
# $(call show,CC,file): the short line, as the start of a recipe line after $(Q).
show      = $(if $(filter 1,$(V))$(SILENT),,printf '  %-3s %s\n' '$(1)' '$(2)';)

# ---- the ISA registry (config/isas.txt) decides the names, the fallback chain
# (the kernel folders compiled into a build) and each folder's flags ----
ISA_LIST  := config/isas.txt
isas      = awk -f tools/isas.awk -v want=$(1) -v isa=$(2) -v arch=$(ARCH) $(ISA_LIST)
ISAS      := $(shell $(call isas,names))
ifeq ($(filter $(ISA),$(ISAS)),)
$(error unknown ISA='$(ISA)'; valid: $(ISAS))
endif
ifeq ($(filter $(THREADS),1 pthread),)
$(error unknown THREADS='$(THREADS)'; valid: 1 pthread)
endif
# clang cross-compiles with CROSS=<prefix> naming the target (CC=clang CROSS=aarch64-linux-gnu-).
TARGET    := $(if $(and $(CROSS),$(findstring clang,$(CC))),--target=$(CROSS:%-=%))
MACHINE   := $(shell $(CC) $(TARGET) -dumpmachine 2>/dev/null)
ARCH      := $(if $(filter aarch64%,$(MACHINE)),aarch64,$(if $(filter arm%,$(MACHINE)),arm32,x86))
CHAIN     := $(shell $(call isas,chain,$(ISA)))
ifeq ($(CHAIN),)
$(error ISA=$(ISA) does not build for $(ARCH) (compiler $(CC): $(MACHINE)); see config/isas.txt)
endif
isa_flags = $(shell $(call isas,flags,$(1)))

# ---- 32-bit x86 (M32=1 with the host gcc, or an i686 compiler). x87 math
# would round differently from every other build (80-bit registers), so all
# code except the guard does its float math in SSE2 registers; the guard stays
# at plain i686 so it can refuse a CPU without SSE2 (Pentium III) cleanly. ----
I686       := $(or $(filter 1,$(M32)),$(filter i386-% i486-% i586-% i686-%,$(shell $(CC) -dumpmachine 2>/dev/null)))
M32_FLAGS  := $(if $(filter 1,$(M32)),-m32)
BASE_FLAGS := $(if $(I686),-msse2 -mfpmath=sse)
# gcc-12-multilib without gcc-multilib (which would remove the ARM cross
# compilers) lacks the /usr/include/asm link -m32 needs; the x86 asm/ headers
# serve both widths, so a link in the build folder stands in for it.
M32_ASM     = $(if $(and $(M32_FLAGS),$(wildcard /usr/include/asm/.)),,$(if $(M32_FLAGS),$(OBJ_BUILD)/m32-include/asm))

OPT      := $(if $(filter 1,$(DEBUG)),-O0 -g,-O2)
# SAN=1: AddressSanitizer + UndefinedBehaviorSanitizer; the first report stops the program.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
OPT      += $(if $(filter 1,$(SAN)),-g $(SAN_FLAGS))
CFLAGS   ?=
CFLAGS   += $(TARGET) $(M32_FLAGS) $(if $(M32_ASM),-isystem $(dir $(M32_ASM))) -std=c11 $(OPT) -Wall -Wextra -ffp-contract=off -D_POSIX_C_SOURCE=200809L \
            -D_FILE_OFFSET_BITS=64 \
            -fvisibility=hidden $(if $(filter 1,$(LIB_PIC)),-fPIC) \
            -I. -I$(dir $(OBJ_BUILD))gen-$(ARCH) -I$(OBJ_BUILD)/gen -DML_ISA=$(ISA) -DML_THREADS_$(THREADS) \
            $(if $(ML_NO_MMAP),-DML_NO_MMAP) $(EXTRA_CFLAGS)
LDFLAGS  ?=
LDFLAGS  += $(TARGET) $(M32_FLAGS) $(if $(filter 1,$(SAN)),$(SAN_FLAGS))
# STATIC=1: no shared libraries at all, so the binary starts on any Linux of
# its architecture, however old its C library (make dist).
LDFLAGS  += $(if $(filter 1,$(STATIC)),-static)
LDLIBS   := -lm $(if $(filter pthread,$(THREADS)),-lpthread)

NAME_SUFFIX := $(if $(filter 1,$(THREADS)),-nothreads)$(if $(ML_NO_MMAP),-nommap)$(if $(filter 1,$(DEBUG)),-debug)$(if $(filter 1,$(ASM)),-asm)$(if $(filter 1,$(SAN)),-san)$(if $(filter 1,$(STATIC)),-static)$(if $(filter 1,$(M32)),-i686)
# The build folder; BUILD=... on the command line overrides it (not the
# environment, where the test scripts keep their own BUILD).
ifneq ($(origin BUILD),command line)
BUILD    := build/$(ISA)$(NAME_SUFFIX)$(if $(CROSS),-$(CROSS:%-=%))$(if $(filter-out gcc $(CROSS)gcc,$(CC)),-$(notdir $(CC)))
# The objects' folder: STATIC=1 changes the link only (LDFLAGS), so a static
# build's objects are those of the same build without it (same flags): make
# dist after make test links the programs instead of compiling everything again.
OBJ_BUILD := $(if $(filter 1,$(STATIC)),$(subst -static,,$(BUILD)),$(BUILD))
else
OBJ_BUILD := $(BUILD)
endif

# ---- sources ----
LIB_SRC    := $(wildcard core/*.c model/*.c ops/*.c api/*.c)
# The guard: the CPU check, and the library's entry points that run it (api/open.c).
LIB_GUARD_SRC := core/isa_check.c api/open.c
GUARD_SRC  := $(LIB_GUARD_SRC) app/main_guard.c
# The random .mlb writer serves the tests and ml_bench only (TEST_LIB_OBJ).
TEST_LIB_SRC := model/mlb_random.c
LIB_SRC    := $(filter-out $(GUARD_SRC) $(TEST_LIB_SRC),$(LIB_SRC))
# ASM=1: the kernels that kernels/<isa>/asm.mk lists (ASM_SRC += kernels/<isa>/name.S)
# come from name.S instead of name.c.
ASM_SRC    :=
-include $(foreach i,$(CHAIN),kernels/$(i)/asm.mk)
ASM_FILES  := $(if $(filter 1,$(ASM)),$(ASM_SRC))
KERN_SRC   := $(foreach i,$(CHAIN),$(filter-out $(patsubst %.S,%.c,$(ASM_FILES)),$(wildcard kernels/$(i)/*.c)))
TEST_SRC   := $(wildcard tests/test_*.c)

obj = $(patsubst %,$(OBJ_BUILD)/obj/%.o,$(basename $(1)))
LIB_OBJ    := $(call obj,$(LIB_SRC) $(KERN_SRC) $(ASM_FILES))
TEST_LIB_OBJ := $(call obj,$(TEST_LIB_SRC))
GUARD_OBJ  := $(call obj,$(GUARD_SRC))
APP_OBJ    := $(call obj,app/cli.c app/json.c app/http.c)
# The programs and their sources besides app/<name>.c (config/programs.txt, read by CMake too).
PROGRAMS   := config/programs.txt
PROG_NAMES := $(shell awk '!/^[[:space:]]*(\#|$$)/ { print $$1 }' $(PROGRAMS))
prog_src    = $(wildcard $(shell awk -v p=$(1) '$$1 == p { $$1 = ""; print }' $(PROGRAMS)))
PROGS      := $(addprefix $(BUILD)/,$(PROG_NAMES))
TESTS      := $(patsubst tests/%.c,$(BUILD)/%,$(TEST_SRC))

# `make` without ISA: the best build for this CPU (best); with ISA=x: all of build x.
.DEFAULT_GOAL := $(if $(filter auto,$(RUN_ISA)),best,all)
.PHONY: best lib lib-files install install-files print-isas all progs help test check check-builds test-all run clean print-build print-gen print-progs bench bench-all bench-vs-llamacpp fuzz fuzz-bins dist
all: $(PROGS) $(TESTS)
progs: $(PROGS)

help:
	@echo "legacy-ml targets:"
	@echo "  make                   ml_run, ml_bench, ml_perplexity, ml_tokenize, ml_server of the best build for this CPU,"
	@echo "                         and the link build/best to it (make run makes it too)"
	@echo "  make ISA=...           build ml_run, ml_bench, ml_perplexity, ml_tokenize, ml_server and the tests into build/<isa>/"
	@echo "  make run               generate a story with models/stories260K on the best"
	@echo "                         build for this CPU (ISA=auto; ISA=x forces a build)"
	@echo "  make test              every ISA this machine can build and run (or emulate),"
	@echo "                         every test, one result matrix (tests/matrix.sh; = make test-all)"
	@echo "  make check [ISA=...]   every test of one build (tests/plan.txt: which test runs on which matrix row)"
	@echo "  make bench             ml_bench (kernels + stories15M decode) of the best build for"
	@echo "                         this CPU, build/best (ISA=x: of that build; BENCH_ARGS=...)"
	@echo "  make bench-all         every runnable x86 build side by side (BENCH_ARGS=...)"
	@echo "  make bench-vs-llamacpp our best build beside llama.cpp's llama-bench (VS_ARGS=--help)"
	@echo "  make fuzz              libFuzzer targets (clang, ASan+UBSan) into build/fuzz/; see fuzz/README.md"
	@echo "  make dist              static ml_run, ml_bench, ml_perplexity, ml_tokenize, ml_server of every ISA and arch this"
	@echo "                         machine builds (x86_64, i686, armv7, aarch64), the launcher dist/ml"
	@echo "                         and SHA256SUMS, into dist/ (docs/DIST.md)"
	@echo "  make lib               libml.a and libml.so (include/legacy_ml.h) into build/<isa>/lib/ (without ISA=: the best build)"
	@echo "  make install PREFIX=D  the header, both libraries and legacy-ml.pc into D (default /usr/local)"
	@echo "  make clean             remove build/ (not dist/, nor CMake's build-*/ folders)"
	@echo "options: ISA=$(ISAS) (config/isas.txt; auto: make, make run, make bench)"
	@echo "         THREADS=pthread|1 (1: no thread pool, into build/<isa>-nothreads/)"
	@echo "         ASM=0|1 DEBUG=0|1 CROSS=<prefix> ML_NO_MMAP=1 CC=clang"
	@echo "         SAN=1 (ASan+UBSan, into build/<isa>-san/)  STATIC=1 (-static)"
	@echo "         M32=1 (32-bit x86, -m32: scalar sse2 sse41 avx2 ...; needs SSE2; into build/<isa>-i686/)"
	@echo "         V=1 (every compiler command; by default a line per file, make -s none)"

# The C side of the registry, generated for every build: ml_isas_gen.h (the
# ISA table, core/isa_check.c) and ml_bind_gen.h (the binding, config/ml_config.h).
# ml_isas_gen.h is the same for every build of an architecture, so it sits
# beside the build folders (GEN_SHARED): a file compiled with the same flags in several builds
# (every kernel folder of the chain, the siblings of make check) then
# preprocesses to the same text, which a compiler cache (.ci/run: ccache)
# compiles once. Builds may write it at the same time: each through its own
# temporary file, renamed into place.
GEN_SHARED := $(dir $(OBJ_BUILD))gen-$(ARCH)
GEN_H      := $(GEN_SHARED)/ml_isas_gen.h $(OBJ_BUILD)/gen/ml_bind_gen.h
GEN_DEPS   := $(ISA_LIST) tools/isas.awk config/ml_kernels.h $(wildcard kernels/*/kernels_*.h)
$(GEN_SHARED)/ml_isas_gen.h: $(GEN_DEPS)
	@mkdir -p $(@D)
	$(Q)$(call show,GEN,$@)$(call isas,header,$(ISA)) >$@.$$$$.tmp && mv -f $@.$$$$.tmp $@
$(OBJ_BUILD)/gen/ml_bind_gen.h: $(GEN_DEPS)
	@mkdir -p $(@D)
	$(Q)$(call show,GEN,$@)$(call isas,bind,$(ISA)) >$@.tmp && mv $@.tmp $@

# ---- objects: baseline flags (BASE_FLAGS), except kernels/<isa>/ and the guard ----
$(LIB_OBJ) $(TEST_LIB_OBJ) $(GUARD_OBJ) $(APP_OBJ) $(call obj,$(wildcard app/*.c) $(TEST_SRC)): | $(GEN_H) $(M32_ASM)
$(OBJ_BUILD)/m32-include/asm:
	@mkdir -p $(@D)
	$(Q)$(call show,LN,$@)ln -sfn /usr/include/$(shell $(CC) -print-multiarch)/asm $@
$(OBJ_BUILD)/obj/kernels/%.o: kernels/%.c
	@mkdir -p $(@D)
	$(Q)$(call show,CC,$<)$(CC) $(CFLAGS) $(BASE_FLAGS) $(call isa_flags,$(firstword $(subst /, ,$*))) -MMD -MP -c $< -o $@
# A static pattern rule, so it wins over the .c rule when name.c also exists.
$(call obj,$(ASM_FILES)): $(OBJ_BUILD)/obj/kernels/%.o: kernels/%.S
	@mkdir -p $(@D)
	$(Q)$(call show,AS,$<)$(CC) $(CFLAGS) $(BASE_FLAGS) $(call isa_flags,$(firstword $(subst /, ,$*))) -c $< -o $@
# The guard: only what every CPU of the architecture runs (no BASE_FLAGS).
$(GUARD_OBJ): $(OBJ_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(Q)$(call show,CC,$<)$(CC) $(CFLAGS) -MMD -MP -c $< -o $@
$(OBJ_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(Q)$(call show,CC,$<)$(CC) $(CFLAGS) $(BASE_FLAGS) -MMD -MP -c $< -o $@

$(PROGS): $(BUILD)/%: $(OBJ_BUILD)/obj/app/%.o $(APP_OBJ) $(GUARD_OBJ) $(LIB_OBJ)
	@mkdir -p $(@D)
	$(Q)$(call show,LD,$@)$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)
$(foreach p,$(PROG_NAMES),$(eval $(BUILD)/$(p): $(call obj,$(call prog_src,$(p)))))
$(TESTS): $(BUILD)/%: $(OBJ_BUILD)/obj/tests/%.o $(GUARD_OBJ) $(LIB_OBJ) $(TEST_LIB_OBJ)
	@mkdir -p $(@D)
	$(Q)$(call show,LD,$@)$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(TEST_LDFLAGS_$(notdir $@))

# test_noalloc counts the allocations our own objects make after load.
# test_fuzz_regress replays fuzz inputs, ml_run's argument parser included.
$(BUILD)/test_fuzz_regress $(BUILD)/test_http: $(APP_OBJ)
TEST_LDFLAGS_test_noalloc := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc

-include $(shell find $(OBJ_BUILD) -name '*.d' 2>/dev/null)

# ---- the library: include/legacy_ml.h (api/) over the same objects, compiled
# position-independent (LIB_PIC=1) into $(BUILD)/lib/. Only the header's
# functions are exported (-fvisibility=hidden, LML_API). The soname carries
# the version of core/version.h: libml.so.MAJOR, or libml.so.0.MINOR before 1.0. ----
ML_VERSION := $(shell sed -n 's/^\#define ML_VERSION "\(.*\)"/\1/p' core/version.h)
ML_SOVER   := $(shell echo $(ML_VERSION) | awk -F. '{ print ($$1 == 0 ? $$1 "." $$2 : $$1) }')
LIB_BUILD  := $(if $(filter 1,$(LIB_PIC)),$(BUILD),$(BUILD)/lib)
LIB_FILES  := $(LIB_BUILD)/libml.a $(LIB_BUILD)/libml.so
PREFIX     ?= /usr/local
# Without ISA: the best build for this CPU, as `make` picks it.
lib install:
ifeq ($(RUN_ISA),auto)
	@$(MAKE) --no-print-directory -s ISA=scalar $(BUILD)/ml_run
	@isa=$$(bash tools/pick_isa.sh $(BUILD)/ml_run) && \
	  echo "make $@: the $$isa build (the best for this CPU; ISA=x make $@: another)" >&2 && \
	  $(MAKE) --no-print-directory ISA=$$isa $@
else
	@$(MAKE) --no-print-directory BUILD=$(LIB_BUILD) LIB_PIC=1 lib-files
	@$(if $(filter install,$@),$(MAKE) --no-print-directory install-files)
endif
lib-files: $(LIB_FILES)
$(BUILD)/libml.a: $(call obj,$(LIB_GUARD_SRC)) $(LIB_OBJ)
	$(Q)$(call show,AR,$@)rm -f $@ && $(CROSS)ar rcs $@ $^
$(BUILD)/libml.so: $(call obj,$(LIB_GUARD_SRC)) $(LIB_OBJ)
	$(Q)$(call show,LD,$@)$(CC) $(LDFLAGS) -shared -Wl,-soname,libml.so.$(ML_SOVER) -Wl,-Bsymbolic $^ -o $@.$(ML_VERSION) $(LDLIBS) && \
	  ln -sf libml.so.$(ML_VERSION) $@.$(ML_SOVER) && ln -sf libml.so.$(ML_VERSION) $@
# The pkg-config file from cmake/legacy-ml.pc.in (CMake fills the same template).
install-files:
	@set -e; d="$(DESTDIR)$(PREFIX)"; install -d "$$d/include" "$$d/lib/pkgconfig"; \
	install -m 644 include/legacy_ml.h "$$d/include/"; \
	install -m 644 $(LIB_BUILD)/libml.a "$$d/lib/"; \
	install -m 755 $(LIB_BUILD)/libml.so.$(ML_VERSION) "$$d/lib/"; \
	ln -sf libml.so.$(ML_VERSION) "$$d/lib/libml.so.$(ML_SOVER)"; ln -sf libml.so.$(ML_VERSION) "$$d/lib/libml.so"; \
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@VERSION@|$(ML_VERSION)|; s|@ISA@|$(ISA)|; s|@LIBS_PRIVATE@|$(LDLIBS)|' \
	  cmake/legacy-ml.pc.in >"$$d/lib/pkgconfig/legacy-ml.pc"; \
	echo "installed legacy-ml $(ML_VERSION) ($(ISA)) into $$d"

# ---- fuzzing: libFuzzer needs clang. The library is rebuilt with coverage
# and sanitizers into build/fuzz/ (build/fuzz-<isa>/ for another ISA). ----
FUZZ_TARGETS := $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
fuzz:
	@$(MAKE) --no-print-directory CC=clang BUILD=build/fuzz$(if $(filter-out scalar,$(ISA)),-$(ISA)) \
	  EXTRA_CFLAGS="-g -fsanitize=fuzzer-no-link $(SAN_FLAGS)" fuzz-bins
fuzz-bins: $(addprefix $(BUILD)/,$(FUZZ_TARGETS))
$(BUILD)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_targets.h $(APP_OBJ) $(LIB_OBJ) | $(GEN_H)
	$(Q)$(call show,LD,$@)$(CC) $(CFLAGS) -fsanitize=fuzzer $< $(APP_OBJ) $(LIB_OBJ) -o $@ $(LDLIBS)

# ---- running ----
# `make test`: the whole matrix (tests/matrix.sh: every ISA this machine
# builds, natively or under qemu). `make check`: one build's suite
# (tests/run_tests.sh), after the sibling builds test_e2e.sh compares with:
# the native scalar reference, this build with ML_NO_MMAP=1, with THREADS=pthread
# and with THREADS=1 (one of the two is this build itself).
test: test-all
# The reference is always the same build, whatever this command line says.
REF_ARGS := ISA=scalar CC=gcc CROSS= THREADS=pthread ASM=0 DEBUG=0 SAN=0 M32=0 ML_NO_MMAP= EXTRA_CFLAGS=

# check-builds: the builds make check runs (tests/run_suites.sh makes them first).
# SAN=1: a failed allocation (test_loader's 256 GiB arena) must return NULL, not abort.
# CHECK_SIBLINGS=0: without the ML_NO_MMAP=1 and THREADS=1 siblings (they hold no
# ISA code; test_e2e.sh skips their comparisons by plan, as on the matrix's ISA rows).
CHECK_SIBLINGS ?= 1
ifeq ($(CHECK_SIBLINGS),0)
SIBLINGS := ref=$$($(MAKE) -s $(REF_ARGS) print-build) && nommap=- && \
	threads=$$($(MAKE) -s THREADS=pthread print-build) && single=-
else
SIBLINGS := ref=$$($(MAKE) -s $(REF_ARGS) print-build) && nommap=$$($(MAKE) -s ML_NO_MMAP=1 print-build) && \
	threads=$$($(MAKE) -s THREADS=pthread print-build) && single=$$($(MAKE) -s THREADS=1 print-build)
endif
check-builds: all
	@$(SIBLINGS) && $(MAKE) -s $(REF_ARGS) $$ref/ml_run && $(MAKE) -s THREADS=pthread $$threads/ml_run && \
	{ [ "$$nommap" = - ] || $(MAKE) -s ML_NO_MMAP=1 $$nommap/ml_run; } && { [ "$$single" = - ] || $(MAKE) -s THREADS=1 $$single/ml_run; }
check: check-builds
	@$(SIBLINGS) && \
	$(if $(filter 1,$(SAN)),ASAN_OPTIONS="allocator_may_return_null=1:$$ASAN_OPTIONS") \
	  BUILD=$(BUILD) ISA=$(ISA) PYTHON=$(PYTHON) MODELS=$(MODELS) RUNNER="$(RUNNER)" \
	  REF_BUILD=$$ref NOMMAP_BUILD=$$nommap THREADS_BUILD=$$threads SINGLE_BUILD=$$single bash tests/run_tests.sh

print-build:
	@echo $(BUILD)
# Where this build's shared generated header lives (tools that compile against a build's objects).
print-gen:
	@echo $(GEN_SHARED)
print-progs:
	@echo $(PROGS)
# The ISAs this compiler builds (its architecture's), lowest first: the Python package's builds.
print-isas:
	@echo $(foreach i,$(ISAS),$(if $(shell $(call isas,chain,$(i))),$(i)))

test-all:
	@PYTHON=$(PYTHON) MODELS=$(MODELS) bash tests/matrix.sh

# tools/run_default.sh makes the builds it needs, a line per build (V=1: every command).
run:
	@BUILD=$(BUILD) ISA=$(ISA) RUN_ISA=$(RUN_ISA) V=$(V) MAKE="$(MAKE)" bash tools/run_default.sh
best:
	@BUILD=$(BUILD) ISA=$(ISA) RUN_ISA=auto V=$(V) MAKE="$(MAKE)" BEST_ONLY=1 bash tools/run_default.sh

# Without ISA: the best build for this CPU (build/best, as `make` makes it).
bench:
ifeq ($(RUN_ISA),auto)
	@BUILD=$(BUILD) ISA=$(ISA) RUN_ISA=auto V=$(V) MAKE="$(MAKE)" BEST_ONLY=1 bash tools/run_default.sh
	@echo "make bench: build/best/ml_bench, the $$(readlink build/best) build (the best for this CPU; ISA=x make bench: another)" >&2
	build/best/ml_bench $(BENCH_ARGS)
else
	@$(MAKE) --no-print-directory -s $(BUILD)/ml_bench
	@echo "make bench: the $(ISA) build ($(BUILD)/ml_bench)" >&2
	$(BUILD)/ml_bench $(BENCH_ARGS)
endif

bench-all:
	@BENCH_ARGS="$(BENCH_ARGS)" bash tools/bench_all.sh

# ml_bench beside llama.cpp's llama-bench (built once into ~/.cache/legacy-ml/).
bench-vs-llamacpp:
	@MODELS=$(MODELS) $(PYTHON) tools/bench_vs_llamacpp.py $(VS_ARGS)

# Static binaries of every ISA and architecture, a launcher, SHA256SUMS.
dist:
	@DIST=$(or $(DIST),dist) bash tools/dist.sh

clean:
	rm -rf build
