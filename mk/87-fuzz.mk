# SPDX-License-Identifier: MIT
# Fuzzing (fuzz/): libFuzzer harnesses built with clang and the sanitizers.
#   make fuzz            build, then run each harness FUZZ_TIME seconds (60), one at a time
#   make fuzz-smoke      build, then run each for FUZZ_SMOKE_TIME seconds (10): for CI
#   make fuzz-bins       build only
#   make fuzz-tunables   run one (also fuzz-api), FUZZ_TIME seconds
# Seeds are in fuzz/corpus/<name>/ (read, never written); what a run finds
# goes to $(BUILD)/fuzz/corpus/<name>/, crashes to $(BUILD)/fuzz/crash/<name>/.
# Harnesses link the test build (API renamed hpt_*), compiled again with
# clang and the sanitizers under $(BUILD)/fuzz-obj/, so libFuzzer keeps the
# system's malloc.  No fuzz target is part of `make check`.
FUZZ_CC       ?= clang
FUZZ_TIME     ?= 60
FUZZ_SMOKE_TIME ?= 10
FUZZ_SAN      ?= -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS   := $(BASE_CFLAGS) -O1 -g -fno-omit-frame-pointer -DHP_TEST_BUILD=1 $(FUZZ_SAN)
FUZZ_DIR      := $(BUILD)/fuzz
# trace_reader joins once tools/hpm (the trace reader, another branch) is in the tree.
FUZZ_NAMES    := tunables api $(if $(wildcard tools/hpm/trace.h),trace_reader)
FUZZ_BINS     := $(patsubst %,$(FUZZ_DIR)/%,$(FUZZ_NAMES))
FUZZ_OBJS     := $(patsubst %.c,$(BUILD)/fuzz-obj/%.o,$(LIB_SRCS))
FUZZ_LIB      := $(BUILD)/lib/libhpmalloc-fuzz.a
# Extra options for every run, e.g. FUZZ_ARGS=-jobs=1
FUZZ_ARGS     ?=

$(BUILD)/fuzz-obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

-include $(FUZZ_OBJS:.o=.d)

$(FUZZ_LIB): $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $(FUZZ_OBJS)

# The tunables harness needs tunables/ only.
$(FUZZ_DIR)/tunables: fuzz/tunables.c tunables/tunables.c tunables/tunables.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ fuzz/tunables.c tunables/tunables.c

$(FUZZ_DIR)/api: fuzz/api.c $(FUZZ_LIB)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ fuzz/api.c $(FUZZ_LIB) -lpthread

# The reader is tools/hpm/trace.c alone (libc only).
$(FUZZ_DIR)/trace_reader: fuzz/trace_reader.c tools/hpm/trace.c tools/hpm/trace.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Itools/hpm -o $@ fuzz/trace_reader.c tools/hpm/trace.c

.PHONY: fuzz fuzz-smoke fuzz-bins $(patsubst %,fuzz-%,$(FUZZ_NAMES))
fuzz-bins: $(FUZZ_BINS)

# One harness: fuzz/run.sh BIN NAME SECONDS BUILD [libFuzzer options]
$(patsubst %,fuzz-%,$(FUZZ_NAMES)): fuzz-%: $(FUZZ_DIR)/%
	@bash fuzz/run.sh $(FUZZ_DIR)/$* $* $(FUZZ_TIME) $(BUILD) $(FUZZ_ARGS)

# Both install clang first when missing (build-aux/deps.sh fuzz).
fuzz fuzz-smoke:
	@bash build-aux/deps.sh fuzz
	@mkdir -p $(BUILD) && $(MAKE) --no-print-directory fuzz-bins >$(BUILD)/fuzz-build.log 2>&1 || { tail -30 $(BUILD)/fuzz-build.log; exit 1; }
	@rc=0; for n in $(FUZZ_NAMES); do \
	  bash fuzz/run.sh $(FUZZ_DIR)/$$n $$n $(if $(filter fuzz-smoke,$@),$(FUZZ_SMOKE_TIME),$(FUZZ_TIME)) \
	    $(BUILD) $(FUZZ_ARGS) || rc=1; done; exit $$rc
