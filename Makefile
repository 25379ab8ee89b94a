# keep — one GNU Makefile for the whole tree.
#
# Sources are found by directory, so a module adds files without editing
# this file:
#   lib/ lang/ policy/ image/ token/ host/*/ and host/*.c (minus keepd.c)
#                                  -> $(B)/libkeep.a
#   cli/*.c                        -> $(B)/bin/keep (keep api: keep-api)
#   host/keepd.c                   -> $(B)/bin/keepd
#   tests/unit/test_*.c            -> $(B)/tests/test_*   (cmocka, one binary each)
#   tests/api_fake.c               -> $(B)/libkeeptest.a  (test doubles, linked
#                                     only into tests, fuzz harnesses and
#                                     keep-api-testserver; never in libkeep.a)
#   fuzz/*.c (but *_driver.c)      -> $(B)/replay/<name>  (replay build; libFuzzer build: build/libfuzzer/bin/<name>)
# A module with special needs (guest kernel, images, integration checks)
# adds a fragment mk/<module>.mk, included below.

B        ?= build
SAN      ?=
CC       ?= gcc
ifeq ($(origin CC),default)
CC        = gcc
endif

WARN      = -Wall -Wextra -Werror -Wimplicit-fallthrough -Wformat=2 -Wshadow \
            -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
HARDEN    = -fstack-protector-strong -fPIE
OPT      ?= -O2
# libbsd as an overlay: <string.h> gains strlcpy, <vis.h> is NetBSD vis.
CPPFLAGS += -I. -D_GNU_SOURCE -isystem /usr/include/bsd -DLIBBSD_OVERLAY -DLIBBSD_NETBSD_VIS
CFLAGS   += -std=gnu11 $(OPT) -g $(WARN) $(HARDEN)
LDFLAGS  += -pie -Wl,-z,relro,-z,now -Wl,--as-needed
LDLIBS   += -lbsd -lseccomp -lcap -lsodium -llmdb -lyaml -lcurl -ljansson -ltls -lssl -lcrypto -lm

ifeq ($(SAN),)
CPPFLAGS += -D_FORTIFY_SOURCE=2
else ifeq ($(SAN),asan)
# FORTIFY and ASan both want to own memcpy and friends; ASan checks more.
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=address,undefined
else ifeq ($(SAN),fuzz)
CFLAGS   += -fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer \
            -fno-sanitize-recover=all -DKEEP_FUZZING
LDFLAGS  += -fsanitize=address,undefined
endif

# keep is linked static-pie: no dynamic loader, no shared libraries to map,
# so `keep run` boots a guest close to the bare KVM floor (bench/boot).
# The sanitizer builds link it as everything else.
ifeq ($(SAN),)
KEEP_LDFLAGS = -static-pie -Wl,-z,relro,-z,now
KEEP_LDLIBS  = -lbsd -lmd -lsodium -ljansson -llmdb -lyaml -lm
else
KEEP_LDFLAGS = $(LDFLAGS)
KEEP_LDLIBS  = $(LDLIBS)
endif

# Debian packages the build, the tests and the benchmarks need. Fragments
# append theirs; mk/deps.sh installs whatever is missing.
DEPS_PKGS += build-essential clang libclang-rt-14-dev clang-format \
             libbsd-dev libseccomp-dev libcap-dev libsodium-dev liblmdb-dev \
             lmdb-utils libyaml-dev libcurl4-openssl-dev libcmocka-dev \
             libjansson-dev libtls-dev libssl-dev python3 curl procps

LIB_SRCS   = $(wildcard lib/*.c lang/*.c policy/*.c image/*.c token/*.c host/*/*.c) \
             $(filter-out host/keepd.c,$(wildcard host/*.c))
# keep api is its own program (keep-api, exec'd by keep): libcurl and
# the libraries it pulls would triple the start-up time of every keep
# command, keep run's boot included.
API_CLI_SRCS = cli/cmd_api.c cli/keep_api.c
KEEP_SRCS  = $(filter-out $(API_CLI_SRCS),$(wildcard cli/*.c))
KEEPD_SRCS = host/keepd.c
UNIT_SRCS  = $(wildcard tests/unit/test_*.c)
TEST_LIB_SRCS = tests/api_fake.c
FUZZ_SRCS  = $(filter-out %_driver.c,$(wildcard fuzz/*.c))

obj        = $(patsubst %.c,$(B)/obj/%.o,$(1))
LIB_OBJS   = $(call obj,$(LIB_SRCS))
UNIT_BINS  = $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRCS))
# What the integration tests run besides keep's own binaries
# (front_unit_stalls.sh drives the front's unit test binary).
INTEGRATION_BINS = $(B)/tests/test_http_front
FUZZ_NAMES = $(patsubst fuzz/%.c,%,$(FUZZ_SRCS))

# Extra targets that `make` builds and `make check` runs; fragments append.
ALL_EXTRA   +=
CHECK_EXTRA +=

.PHONY: all deps check unit unit-asan fuzz-replay fuzz-smoke fuzz-seeds integration \
        format format-check run clean tests
.DEFAULT_GOAL := all
# Keep objects that pattern chains build (harness and test objects).
.SECONDARY:

# Fragments come before the first rule that uses their variables, so what
# they add to ALL_EXTRA, CHECK_EXTRA, DEPS_PKGS and LIB_OBJS is seen.
-include $(sort $(wildcard mk/*.mk))

all: deps $(B)/bin/keep $(B)/bin/keep-api $(B)/bin/keepd $(ALL_EXTRA)

deps:
	@sh mk/deps.sh $(sort $(DEPS_PKGS))

# Every rule that runs a compiler or a build tool has `| deps`: on a fresh
# machine `make -j2` must not start the compiler before deps installs it.
$(B)/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(B)/libkeep.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/libkeeptest.a: $(call obj,$(TEST_LIB_SRCS))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/bin/keep: $(call obj,$(KEEP_SRCS)) $(B)/libkeep.a
	@mkdir -p $(dir $@)
	$(CC) $(KEEP_LDFLAGS) -o $@ $(call obj,$(KEEP_SRCS)) $(B)/libkeep.a $(KEEP_LDLIBS)

$(B)/bin/keep-api: $(call obj,$(API_CLI_SRCS)) $(B)/libkeep.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(call obj,$(API_CLI_SRCS)) $(B)/libkeep.a $(LDLIBS)

$(B)/bin/keepd: $(call obj,$(KEEPD_SRCS)) $(B)/libkeep.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(call obj,$(KEEPD_SRCS)) $(B)/libkeep.a $(LDLIBS)

$(B)/tests/%: $(B)/obj/tests/unit/%.o $(B)/libkeeptest.a $(B)/libkeep.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(B)/libkeeptest.a $(B)/libkeep.a $(LDLIBS) -lcmocka

# The vDSO page's test sets the host's clocks it reads (a step of the
# wall clock) by wrapping clock_gettime in the library's objects.
$(B)/tests/test_vmm_vdso: LDFLAGS += -Wl,--wrap=clock_gettime

# Replay build of each fuzz harness: an ordinary program that feeds every
# file named on its command line to LLVMFuzzerTestOneInput.
$(B)/replay/%: $(B)/obj/fuzz/%.o $(B)/obj/fuzz/replay_driver.o $(B)/libkeeptest.a $(B)/libkeep.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(B)/obj/fuzz/replay_driver.o $(B)/libkeeptest.a $(B)/libkeep.a $(LDLIBS)

# libFuzzer build: the whole library again with clang and sanitizers.
build/libfuzzer/bin/%: FORCE
	$(MAKE) --no-print-directory B=build/libfuzzer SAN=fuzz CC=clang build/libfuzzer/libkeeptest.a build/libfuzzer/libkeep.a build/libfuzzer/obj/fuzz/$*.o
	@mkdir -p $(dir $@)
	clang -fsanitize=fuzzer,address,undefined -o $@ build/libfuzzer/obj/fuzz/$*.o build/libfuzzer/libkeeptest.a build/libfuzzer/libkeep.a $(LDLIBS)
.PHONY: FORCE
FORCE:

tests: $(UNIT_BINS) $(addprefix $(B)/replay/,$(FUZZ_NAMES))

unit: deps tests
	@bash tests/run-tests.sh unit $(UNIT_BINS)

unit-asan: deps
	$(MAKE) --no-print-directory B=build/asan SAN=asan OPT=-O1 tests
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  bash tests/run-tests.sh unit-asan $(patsubst $(B)/%,build/asan/%,$(UNIT_BINS))

fuzz-replay: deps $(addprefix $(B)/replay/,$(FUZZ_NAMES)) $(B)/fuzz-seeds/gen_seeds
	@st=0; sh tests/run-fuzz.sh replay $(B)/replay $(FUZZ_NAMES) || st=1; \
	GEN_SEEDS=$(B)/fuzz-seeds/gen_seeds bash tests/run-tests.sh fuzz-seeds tests/fuzz-seeds.sh || st=1; \
	exit $$st

# Seed generator: fuzz/seeds/gen_seeds.c builds the binary seed corpora
# with the project's own encoders (struct grant, store_wire_*_encode, ...),
# so a layout change regenerates them. fuzz-seeds replaces each corpus it
# writes; tests/fuzz-seeds.sh (unit, so make check) fails when the
# committed corpora differ from its output.
$(B)/fuzz-seeds/gen_seeds: $(B)/obj/fuzz/seeds/gen_seeds.o $(B)/libkeep.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(B)/libkeep.a $(LDLIBS)

fuzz-seeds: deps $(B)/fuzz-seeds/gen_seeds
	@set -e; out=$$(mktemp -d); trap 'rm -rf "$$out"' EXIT; \
	$(B)/fuzz-seeds/gen_seeds "$$out"; \
	for d in "$$out"/*/; do n=$$(basename "$$d"); \
	  rm -rf "fuzz/corpus/$$n"; cp -r "$$d" "fuzz/corpus/$$n"; echo "fuzz-seeds: fuzz/corpus/$$n"; \
	done

FUZZ_SECONDS ?= 10
fuzz-smoke: deps $(addprefix build/libfuzzer/bin/,$(FUZZ_NAMES))
	@FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/run-fuzz.sh smoke build/libfuzzer/bin $(FUZZ_NAMES)

# Two integration tests at a time (make check's two cores; most of a
# test's time is waiting on keepd and guests); tests/run-tests.sh runs
# the ones marked "# run-tests: alone" by themselves.
INTEGRATION_JOBS ?= 2
integration: all $(INTEGRATION_BINS)
	@JOBS=$(INTEGRATION_JOBS) bash tests/run-tests.sh integration $(sort $(wildcard tests/integration/*.sh))

# The whole suite. Each step prints its own summary; tests/summary.sh adds
# them up into the closing "N passed, N failed" line.
check: deps
	@mkdir -p $(B) && rm -f $(B)/results.txt $(B)/results.txt.failed
	@status=0; \
	for t in format-check all unit fuzz-replay integration $(CHECK_EXTRA) unit-asan fuzz-smoke; do \
	  echo "==> make $$t"; \
	  $(MAKE) --no-print-directory RESULTS=$(abspath $(B))/results.txt $$t || status=1; \
	done; \
	sh tests/summary.sh $(B)/results.txt; \
	exit $$status

CLANG_FORMAT ?= clang-format
# The files git knows; in a tree without git (a tarball, a copy), every
# .c and .h outside the build directories. No files at all is an error:
# clang-format given none would read stdin and a check of nothing passes.
FORMAT_SRCS = $(shell { git ls-files --cached --others --exclude-standard '*.c' '*.h' 2>/dev/null || \
                find . \( -path ./build -o -path ./$(B) -o -path ./.git \) -prune -o \
                  -type f \( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||'; } | \
                grep -v '^fuzz/corpus/' | sort)
format:
	@[ -n "$(strip $(FORMAT_SRCS))" ] || { echo "format: no .c or .h files found" >&2; exit 1; }
	$(CLANG_FORMAT) -i $(FORMAT_SRCS)
format-check:
	@if [ -z "$(strip $(FORMAT_SRCS))" ]; then echo "format-check: no .c or .h files found" >&2; \
	  echo "format-check 0 1" >> "$${RESULTS:-/dev/null}"; exit 1; fi; \
	out=$$($(CLANG_FORMAT) --dry-run $(FORMAT_SRCS) </dev/null 2>&1); \
	if [ -n "$$out" ]; then echo "$$out" | head -40; echo "format-check: run 'make format'"; \
	  echo "format-check 0 1" >> "$${RESULTS:-/dev/null}"; exit 1; fi; \
	echo "format-check: $(words $(FORMAT_SRCS)) files clean"; \
	echo "format-check 1 0" >> "$${RESULTS:-/dev/null}"

run: all
	@sh mk/run.sh $(B)

clean:
	rm -rf build

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
