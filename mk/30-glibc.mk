# SPDX-License-Identifier: MIT
# glibc's own malloc tests (tests/glibc/, see tests/glibc/README.md).
# Owns: check-glibc, check-glibc-native, glibc-tests-build and everything
# under $(BUILD)/glibc-src and $(BUILD)/glibc-tests*.
#
#   make check-glibc                     run them against hpmalloc
#   make check-glibc GLIBC_TESTS="tst-malloc tst-calloc"   only these
#   make check-glibc GLIBC_LINKS=static GLIBC_MODES=2        only these runs
#   make check-glibc-native              run them against glibc's malloc
#                                        (validates the harness)
#
# glibc 2.36's tests are extracted from Debian's glibc-source tarball at
# build time, compiled against our shim of glibc's support/ harness
# (tests/glibc/support/), linked twice (dynamic, run with LD_PRELOAD of
# libhpmalloc.so; static, with libhpmalloc.a) and run in hugetlb modes 0-2.

GLIBC_TARBALL   ?= /usr/src/glibc/glibc-2.36.tar.xz
GLIBC_TOPDIR    := glibc-2.36
GLIBC_SRC       := $(BUILD)/glibc-src
GLIBC_STAMP     := $(GLIBC_SRC)/.extracted
# hpmalloc (default) or glibc: the allocator the tests run against.
GLIBC_TESTS_AGAINST ?= hpmalloc
GLIBC_TESTS     ?=
# Subsets: GLIBC_LINKS="dynamic" GLIBC_MODES="0 1".
GLIBC_LINKS     ?=
GLIBC_MODES     ?=
GLIBC_JOBS      ?= 2

ifeq ($(GLIBC_TESTS_AGAINST),glibc)
GLIBC_OUT        := $(BUILD)/glibc-tests-native
GLIBC_STATIC_LIB :=
GLIBC_ALLOC_DEPS :=
GLIBC_RUN_ARGS   := --against glibc
else
GLIBC_OUT        := $(BUILD)/glibc-tests
GLIBC_STATIC_LIB := $(LIB_A)
GLIBC_ALLOC_DEPS := $(LIB_SO) $(LIB_A)
GLIBC_RUN_ARGS   := --against hpmalloc --preload $(LIB_SO) --summary $(BUILD)/summary/glibc.txt
endif

GLIBC_TEST_NAMES := $(shell awk '!/^[[:space:]]*(\#|$$)/ {print $$1}' tests/glibc/tests.conf)
GLIBC_SUPPORT_SRCS := $(filter-out tests/glibc/support/test-driver.c,$(wildcard tests/glibc/support/*.c))
GLIBC_SUPPORT_HDRS := $(wildcard tests/glibc/support/*.h) tests/glibc/support/test-driver.c \
                      tests/glibc/test-skeleton.c
GLIBC_SUPPORT_OBJS := $(patsubst tests/glibc/support/%.c,$(GLIBC_OUT)/support/%.o,$(GLIBC_SUPPORT_SRCS))
GLIBC_SUPPORT_LIB  := $(GLIBC_OUT)/support/libsupport.a
GLIBC_DYN_BINS     := $(GLIBC_TEST_NAMES:%=$(GLIBC_OUT)/dynamic/%)
GLIBC_STATIC_BINS  := $(GLIBC_TEST_NAMES:%=$(GLIBC_OUT)/static/%)
GLIBC_PROBE        := $(GLIBC_OUT)/probe

# glibc compiles its malloc tests with -DTEST_NO_MALLOPT.  -fno-builtin and
# -O1 keep the compiler from folding away malloc calls with absurd sizes.
# -iquote makes "../test-skeleton.c" resolve to tests/glibc/test-skeleton.c.
GLIBC_TEST_CPPFLAGS := -D_GNU_SOURCE -DTEST_NO_MALLOPT -Itests/glibc \
                       -iquote tests/glibc/support -I$(GLIBC_SRC)/include
GLIBC_TEST_CFLAGS   := -std=gnu11 -O1 -g -fno-builtin -w
GLIBC_SUPPORT_CFLAGS := -std=gnu11 -O1 -g -fno-builtin -Wall -Wextra \
                        -D_GNU_SOURCE -Itests/glibc

.PHONY: check-glibc check-glibc-native glibc-tests-build glibc-src

# Extraction, once: the malloc tests, glibc's Makefile (for the per-test
# settings and the list of tests) and the few glibc headers they include.
$(GLIBC_STAMP):
	@if [ ! -f $(GLIBC_TARBALL) ]; then \
	  echo "check-glibc: $(GLIBC_TARBALL) not found; install Debian's glibc-source package (bash build-aux/deps.sh check)" >&2; \
	  exit 1; fi
	@rm -rf $(GLIBC_SRC) && mkdir -p $(GLIBC_SRC)/include
	tar -xJf $(GLIBC_TARBALL) -C $(GLIBC_SRC) --strip-components=1 --wildcards \
	  '$(GLIBC_TOPDIR)/malloc/tst-*.[ch]' $(GLIBC_TOPDIR)/malloc/mallocbug.c \
	  $(GLIBC_TOPDIR)/malloc/Makefile $(GLIBC_TOPDIR)/include/libc-diag.h \
	  $(GLIBC_TOPDIR)/include/array_length.h \
	  $(GLIBC_TOPDIR)/sysdeps/generic/malloc-size.h \
	  $(GLIBC_TOPDIR)/sysdeps/generic/malloc-alignment.h
	@mv $(GLIBC_SRC)/sysdeps/generic/*.h $(GLIBC_SRC)/include/ && rm -rf $(GLIBC_SRC)/sysdeps
	@touch $@

glibc-src: $(GLIBC_STAMP)

GLIBC_OBJS := $(GLIBC_TEST_NAMES:%=$(GLIBC_OUT)/obj/%.o)
.SECONDARY: $(GLIBC_OBJS)

$(GLIBC_OUT)/support/%.o: tests/glibc/support/%.c $(GLIBC_SUPPORT_HDRS)
	@mkdir -p $(dir $@)
	@echo "  CC      glibc support/$*.c"
	@$(CC) $(GLIBC_SUPPORT_CFLAGS) -c $< -o $@

$(GLIBC_SUPPORT_LIB): $(GLIBC_SUPPORT_OBJS)
	@rm -f $@ && $(AR) rcs $@ $^

$(GLIBC_OUT)/obj/%.o: $(GLIBC_STAMP) $(GLIBC_SUPPORT_HDRS)
	@mkdir -p $(dir $@)
	@echo "  CC      glibc malloc/$*.c"
	@$(CC) $(GLIBC_TEST_CPPFLAGS) $(GLIBC_TEST_CFLAGS) -c $(GLIBC_SRC)/malloc/$*.c -o $@ > $@.log 2>&1 \
	  || { cat $@.log; exit 1; }

$(GLIBC_OUT)/dynamic/%: $(GLIBC_OUT)/obj/%.o $(GLIBC_SUPPORT_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      glibc dynamic/$*"
	@$(CC) -o $@ $< $(GLIBC_SUPPORT_LIB) -lpthread > $@.log 2>&1 || { cat $@.log; exit 1; }

# glibc's malloc must not be pulled in: libhpmalloc.a comes before libc.
$(GLIBC_OUT)/static/%: $(GLIBC_OUT)/obj/%.o $(GLIBC_SUPPORT_LIB) $(GLIBC_STATIC_LIB)
	@mkdir -p $(dir $@)
	@echo "  LD      glibc static/$*"
	@$(CC) -static -o $@ $< $(GLIBC_SUPPORT_LIB) $(GLIBC_STATIC_LIB) -lpthread > $@.log 2>&1 \
	  || { cat $@.log; exit 1; }

$(GLIBC_PROBE): tests/glibc/probe.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -Wall -Wextra -o $@ $< -ldl

glibc-tests-build: $(GLIBC_ALLOC_DEPS) $(GLIBC_DYN_BINS) $(GLIBC_STATIC_BINS) $(GLIBC_PROBE)

# A test that does not compile or link counts as failed (the runner shows
# the compiler's messages); the harness, the extraction and the allocator
# must build.
check-glibc:
	@$(MAKE) --no-print-directory -j$(GLIBC_JOBS) $(GLIBC_ALLOC_DEPS) $(GLIBC_SUPPORT_LIB) $(GLIBC_PROBE) $(GLIBC_STAMP)
	@$(MAKE) --no-print-directory -k -j$(GLIBC_JOBS) glibc-tests-build || \
	  echo "check-glibc: some glibc tests did not build; they count as failed"
	@bash tests/glibc/run.sh --src $(GLIBC_SRC) --bin $(GLIBC_OUT) --out $(GLIBC_OUT) \
	  --jobs $(GLIBC_JOBS) $(GLIBC_RUN_ARGS) $(if $(strip $(GLIBC_TESTS)),--tests "$(GLIBC_TESTS)") \
	  $(if $(strip $(GLIBC_LINKS)),--links "$(GLIBC_LINKS)") $(if $(strip $(GLIBC_MODES)),--modes "$(GLIBC_MODES)")

check-glibc-native:
	@$(MAKE) --no-print-directory check-glibc GLIBC_TESTS_AGAINST=glibc

CHECK_TARGETS += check-glibc
