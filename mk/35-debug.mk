# SPDX-License-Identifier: MIT
# The debug build: the same sources with their invariants checked
# (-DHP_DEBUG=1: HP_ASSERT in malloc/check.h, lock holders recorded in
# malloc/lock.h) at -O1, built under $(BUILD)/debug with its own objects,
# libraries and test binaries; and the unit, API and glibc suites run
# against it once.  Owns: debug, check-debug and $(BUILD)/debug.
#   make debug                 $(BUILD)/debug/lib/libhpmalloc.so, .a and -test.a
#   make check-debug           the three suites against them (part of make check)
#   make check-debug DEBUG_GLIBC_MODES="0 1 2"   the glibc suite in every mode
# The glibc suite runs in one huge-page mode by default (DEBUG_GLIBC_MODES,
# 1: THP), both links; the release pass runs all three.  The unit suite
# runs in every mode, as check-unit does.  The glibc sources are extracted
# once, for both passes ($(BUILD)/glibc-src).
DEBUG_BUILD       := $(BUILD)/debug
DEBUG_GLIBC_MODES ?= 1
DEBUG_MAKE = $(MAKE) --no-print-directory BUILD=$(DEBUG_BUILD) OPT='-O1 -g' CFLAGS='$(CFLAGS) -DHP_DEBUG=1' \
  GLIBC_SRC=$(abspath $(BUILD))/glibc-src

.PHONY: debug check-debug
debug:
	@$(DEBUG_MAKE) -j2 $(DEBUG_BUILD)/lib/libhpmalloc.so $(DEBUG_BUILD)/lib/libhpmalloc.a \
	  $(DEBUG_BUILD)/lib/libhpmalloc-test.a

# Every suite runs even when one fails; the status says whether all passed.
check-debug: debug
	@rc=0; \
	echo "--- check-unit (debug build)"; $(DEBUG_MAKE) check-unit || rc=1; \
	echo "--- check-api (debug build)"; $(DEBUG_MAKE) check-api || rc=1; \
	echo "--- check-glibc (debug build, modes $(DEBUG_GLIBC_MODES))"; \
	$(DEBUG_MAKE) check-glibc GLIBC_MODES="$(DEBUG_GLIBC_MODES)" || rc=1; \
	exit $$rc

CHECK_TARGETS += check-debug
