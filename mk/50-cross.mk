# SPDX-License-Identifier: MIT
# Owned by sysdeps.  Two things:
#
# 1. The sysdeps unit test (tests/unit/test_sysdeps.c) checks every
#    architecture's placement policy on any host, so it links the placement.c
#    of the other architectures beside the test library (which has the
#    build's own).  This rule overrides 10-unit.mk's pattern rule for that
#    one test.
#
# 2. make check-cross [ARCH=ppc64le|ppc64|aarch64]   (default: all three)
#    Installs the Debian cross compilers and qemu-user when missing
#    (build-aux/deps.sh cross), builds sysdeps and the library with
#    <triplet>-gcc into build/cross-<ARCH>, and runs under qemu-user:
#      - tests/cross/cross_placement: the live probe and OS primitives, and
#        the placement of the architecture's fixtures (on powerpc64 the hash
#        fixture's heap must land at or above 1 TiB); powerpc runs with
#        4 KiB pages and again with -p 65536 (real ppc64le kernels use
#        64 KiB pages);
#      - tests/cross/cross_smoke: the malloc API with libhpmalloc.so
#        preloaded, under glibc.malloc.hugetlb=0, 1 and 2 (qemu gives no huge
#        pages, so 1 and 2 run the fallback path).  Run once the allocator's
#        entry points exist (malloc/malloc.c and the version script);
#        skipped with a message before that.
#    Criterion has no cross build, so the Criterion unit tests are not
#    cross-built; check-cross is not part of `make check`.

# --- 1. the sysdeps unit test -------------------------------------------------
SYSDEPS_ALL_PLACEMENT := $(sort $(wildcard sysdeps/*/placement.c sysdeps/*/*/placement.c))
SYSDEPS_OTHER_PLACEMENT_OBJS := $(patsubst %.c,$(BUILD)/test-obj/%.o,\
  $(filter-out $(SYSDEPS_ARCH)/placement.c,$(SYSDEPS_ALL_PLACEMENT)))

$(BUILD)/tests/unit/test_sysdeps: tests/unit/test_sysdeps.c $(LIB_TEST) $(SYSDEPS_OTHER_PLACEMENT_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -Itests/unit -o $@ $< $(SYSDEPS_OTHER_PLACEMENT_OBJS) $(LIB_TEST) -lcriterion -lpthread

# --- 2. check-cross -------------------------------------------------------------
CROSS_ARCHS := ppc64le ppc64 aarch64
cross_triplet_ppc64le := powerpc64le-linux-gnu
cross_triplet_ppc64   := powerpc64-linux-gnu
cross_triplet_aarch64 := aarch64-linux-gnu
cross_qemu_ppc64le    := qemu-ppc64le
cross_qemu_ppc64      := qemu-ppc64
cross_qemu_aarch64    := qemu-aarch64
# qemu -p values to run with ("default" = qemu's own page size).
cross_pages_ppc64le   := default 65536
cross_pages_ppc64     := default 65536
cross_pages_aarch64   := default

# Only an ARCH given on the command line selects; an ARCH in the
# environment (kernel builds set one) does not.
CROSS_SELECTED := $(if $(filter command line,$(origin ARCH)),$(ARCH),$(CROSS_ARCHS))

cross_one = $(if $(cross_triplet_$(1)),\
  $(MAKE) --no-print-directory BUILD=build/cross-$(1) CC=$(cross_triplet_$(1))-gcc \
    VALGRIND_CFLAGS= CROSS_ARCH=$(1) cross-run,\
  { echo "check-cross: unknown ARCH '$(1)' (one of: $(CROSS_ARCHS))" >&2; false; })

.PHONY: check-cross cross-run cross-smoke cross-heap
check-cross:
	@bash build-aux/deps.sh cross
	@rc=0; $(foreach a,$(CROSS_SELECTED),$(call cross_one,$(a)) || rc=1;) \
	  if [ $$rc = 0 ]; then echo "check-cross: $(CROSS_SELECTED): passed"; \
	  else echo "check-cross: $(CROSS_SELECTED): FAILED" >&2; fi; exit $$rc

# The rest runs in the sub-make, with CC the cross compiler.
CROSS_SYSROOT := /usr/$(cross_triplet_$(CROSS_ARCH))
CROSS_QEMU    := $(cross_qemu_$(CROSS_ARCH)) -L $(CROSS_SYSROOT)
CROSS_BIN     := $(BUILD)/tests/cross
CROSS_SYSDEPS_OBJS := $(patsubst %.c,$(BUILD)/test-obj/%.o,$(SYSDEPS_SRCS))
CROSS_HAVE_CORE := $(and $(wildcard malloc/malloc.c),$(wildcard $(VERSION_SCRIPT)))

$(CROSS_BIN)/cross_placement: tests/cross/cross_placement.c $(CROSS_SYSDEPS_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(CROSS_SYSDEPS_OBJS)

$(CROSS_BIN)/cross_smoke: tests/cross/cross_smoke.c include/hpmalloc.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) -D_GNU_SOURCE -O1 -g -Iinclude -o $@ $< -ldl -lpthread

cross-run: $(CROSS_BIN)/cross_placement
	@echo "=== check-cross $(CROSS_ARCH): $(CC) ($(TRIPLET)), sysdeps $(SYSDEPS_OS) $(SYSDEPS_ARCH)"
	@for p in $(cross_pages_$(CROSS_ARCH)); do \
	  opt=; [ $$p = default ] || opt="-p $$p"; \
	  echo "--- $(CROSS_ARCH): $(CROSS_QEMU) $$opt cross_placement"; \
	  $(CROSS_QEMU) $$opt $(CROSS_BIN)/cross_placement $(CURDIR)/tests/fixtures || exit 1; \
	done
ifneq (,$(CROSS_HAVE_CORE))
	@$(MAKE) --no-print-directory cross-smoke
	@$(if $(cross_heap_fixture_$(CROSS_ARCH)),$(MAKE) --no-print-directory cross-heap,true)
else
	@echo "--- $(CROSS_ARCH): API smoke test skipped: the allocator's entry points" \
	  "(malloc/malloc.c, $(VERSION_SCRIPT)) do not exist yet"
endif

# The allocator's heap on the POWER9 hash fixture: at or above 1 TiB.
$(CROSS_BIN)/cross_heap: tests/cross/cross_heap.c $(LIB_TEST)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(LIB_TEST) -lpthread

cross_heap_fixture_ppc64le := power9-hash
cross_heap_fixture_ppc64   := power9-hash
cross_heap_floor_ppc64le   := 10000000000
cross_heap_floor_ppc64     := 10000000000

cross-heap: $(CROSS_BIN)/cross_heap
	@for p in $(cross_pages_$(CROSS_ARCH)); do for mode in 0 1 2; do \
	  opt=; [ $$p = default ] || opt="-p $$p"; \
	  echo "--- $(CROSS_ARCH): $(CROSS_QEMU) $$opt cross_heap on $(cross_heap_fixture_$(CROSS_ARCH)), glibc.malloc.hugetlb=$$mode"; \
	  $(CROSS_QEMU) $$opt -E HPMALLOC_TEST_SYSROOT=$(CURDIR)/tests/fixtures/$(cross_heap_fixture_$(CROSS_ARCH)) \
	    -E GLIBC_TUNABLES=glibc.malloc.hugetlb=$$mode $(CROSS_BIN)/cross_heap $(cross_heap_floor_$(CROSS_ARCH)) || exit 1; \
	done; done

cross-smoke: $(LIB_SO) $(CROSS_BIN)/cross_smoke
	@for p in $(cross_pages_$(CROSS_ARCH)); do for mode in 0 1 2; do \
	  opt=; [ $$p = default ] || opt="-p $$p"; \
	  echo "--- $(CROSS_ARCH): $(CROSS_QEMU) $$opt cross_smoke, glibc.malloc.hugetlb=$$mode"; \
	  $(CROSS_QEMU) $$opt -E LD_PRELOAD=$(CURDIR)/$(LIB_SO) -E GLIBC_TUNABLES=glibc.malloc.hugetlb=$$mode \
	    $(CROSS_BIN)/cross_smoke --expect-hpmalloc || exit 1; \
	done; done
