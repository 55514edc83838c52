# SPDX-License-Identifier: MIT
# musl (tests/musl/):
#   make musl         $(BUILD)/musl/lib/libhpmalloc.a, built with musl-gcc
#                     (Debian's musl-tools; MUSL_CC to use another)
#   make check-musl   (in `make check`) programs linked `musl-gcc -static`
#                     with it: the API test, the misuse and address-space
#                     tests of check-hardening, static-tunables of
#                     check-static, the huge-page coverage suite, and
#                     libc-own (musl's own allocations, internal ones
#                     included, come from hpmalloc); skipped, saying why,
#                     when musl-gcc is missing (build-aux/deps.sh installs it)
# The library is built by a sub-make with CC=$(MUSL_CC): the GNUmakefile
# then selects the musl pieces (sysdeps/musl/, the kernel headers).
MUSL_CC    ?= musl-gcc
MUSL_BUILD := $(BUILD)/musl
MUSL_LIB   := $(MUSL_BUILD)/lib/libhpmalloc.a
MUSL_BIN   := $(MUSL_BUILD)/tests
MUSL_CFLAGS := -std=gnu11 -O1 -g -Wall -Wextra -Iinclude -Isysdeps/musl -static
MUSL_LINK  = $(MUSL_CC) $(MUSL_CFLAGS) -o $@ $(filter %.c,$^) $(MUSL_LIB)
MUSL_BINS  := $(MUSL_BIN)/api/api-static $(MUSL_BIN)/hardening/misuse-static $(MUSL_BIN)/hardening/limits \
              $(MUSL_BIN)/static-tunables $(MUSL_BIN)/libc-own \
              $(MUSL_BIN)/hugepages/coverage $(MUSL_BIN)/hugepages/backed $(MUSL_BIN)/hugepages/emptyroot

.PHONY: musl musl-bins check-musl
musl:
	@command -v $(MUSL_CC) >/dev/null || { echo "make musl: $(MUSL_CC) not found (Debian: apt-get install musl-tools)" >&2; exit 1; }
	@$(MAKE) --no-print-directory BUILD=$(MUSL_BUILD) CC=$(MUSL_CC) VALGRIND_CFLAGS= $(MUSL_LIB)

# $(MUSL_LIB) is made by `make musl` (check-musl runs it first).
$(MUSL_BIN)/api/api-static: tests/api/api_test.c $(API_HDRS) $(MUSL_LIB)
	@mkdir -p $(dir $@)
	$(MUSL_LINK) -D_GNU_SOURCE -Itests/api -DHPT_LINKED=1
$(MUSL_BIN)/hardening/misuse-static: tests/hardening/misuse.c $(MUSL_LIB)
	@mkdir -p $(dir $@)
	$(MUSL_LINK) -D_GNU_SOURCE $(HARD_MISUSE_FLAGS)
$(MUSL_BIN)/hardening/limits: tests/hardening/limits.c include/hpmalloc.h $(MUSL_LIB)
	@mkdir -p $(dir $@)
	$(MUSL_LINK) -D_GNU_SOURCE
$(MUSL_BIN)/static-tunables: tests/integration/static-tunables.c include/hpmalloc.h $(MUSL_LIB)
	@mkdir -p $(dir $@)
	$(MUSL_LINK) -D_GNU_SOURCE -DHPT_DEFAULTS
$(MUSL_BIN)/libc-own: tests/musl/libc-own.c include/hpmalloc.h $(MUSL_LIB)
	@mkdir -p $(dir $@)
	$(MUSL_LINK)
$(MUSL_BIN)/hugepages/%: tests/hugepages/%.c $(MUSL_LIB)
	@mkdir -p $(dir $@)
	$(MUSL_LINK) -DHPT_LINKED=1

musl-bins: $(MUSL_BINS)

check-musl:
	@if ! command -v $(MUSL_CC) >/dev/null; then \
	  echo "check-musl: SKIP: $(MUSL_CC) not found (Debian: apt-get install musl-tools; build-aux/deps.sh check does)"; \
	  mkdir -p $(BUILD)/summary; echo "musl: skipped ($(MUSL_CC) not found)" > $(BUILD)/summary/musl.txt; exit 0; fi
	@$(MAKE) --no-print-directory musl
	@$(MAKE) --no-print-directory musl-bins
	@BUILD=$(BUILD) MUSL_BUILD=$(MUSL_BUILD) bash tests/musl/run.sh

CHECK_TARGETS += check-musl
