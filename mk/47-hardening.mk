# SPDX-License-Identifier: MIT
# Hardening (issue 6; tests/hardening/, tests/unit/test_faults.c).
#
#   make check-hardening   (in `make check`) misuse caught with glibc's
#                          messages (on glibc too, which validates them),
#                          hostile tunables and the setuid path, RLIMIT_AS,
#                          a hugetlb pool running dry mid-run (root),
#                          where diagnostics go, a seccomp sandbox
#                          refusing madvise, mremap and mbind
#   make check-soak        (not in `make check`) threads, cross-thread
#                          frees, fork, modes 1 and 2, RSS after the load;
#                          SOAK_SECONDS per mode (default 60)
#   make check-sanitize    (not in `make check`) the unit tests built with
#                          -fsanitize=address,undefined, in $(BUILD)/sanitize
# The fault-injection test (tests/unit/test_faults.c) is a unit test:
# check-unit builds and runs it in modes 0-2.
HARD_DIR    := $(BUILD)/tests/hardening
HARD_CFLAGS := -std=gnu11 -O1 -g -Wall -Wextra -D_GNU_SOURCE -Iinclude
# the misuse is deliberate: keep the compiler from warning about or folding it
HARD_MISUSE_FLAGS := -fno-builtin -Wno-use-after-free -Wno-free-nonheap-object -Wno-array-bounds \
                     -Wno-missing-field-initializers
HARD_BINS := $(HARD_DIR)/misuse $(HARD_DIR)/misuse-static $(HARD_DIR)/tunables_probe $(HARD_DIR)/limits \
             $(HARD_DIR)/diag $(HARD_DIR)/diag-static $(HARD_DIR)/sandbox

# plain: runs on glibc and under LD_PRELOAD
$(HARD_DIR)/misuse: tests/hardening/misuse.c
	@mkdir -p $(dir $@)
	$(CC) $(HARD_CFLAGS) $(HARD_MISUSE_FLAGS) -o $@ $< -lpthread

$(HARD_DIR)/misuse-static: tests/hardening/misuse.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(HARD_CFLAGS) $(HARD_MISUSE_FLAGS) -static -o $@ $< $(LIB_A) -lpthread

# where diagnostics go: preloaded, and linked statically
$(HARD_DIR)/diag: tests/hardening/diag.c
	@mkdir -p $(dir $@)
	$(CC) $(HARD_CFLAGS) -o $@ $< -lpthread

$(HARD_DIR)/diag-static: tests/hardening/diag.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(HARD_CFLAGS) -static -o $@ $< $(LIB_A) -lpthread

# a seccomp filter that makes madvise, mremap and mbind fail with EPERM
$(HARD_DIR)/sandbox: tests/hardening/sandbox.c
	@mkdir -p $(dir $@)
	$(CC) $(HARD_CFLAGS) -o $@ $<

# the test build: reads the environment as the library does, shows mp
$(HARD_DIR)/tunables_probe: tests/hardening/tunables_probe.c $(LIB_TEST)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(LIB_TEST) -lpthread

# RLIMIT_AS and a hugetlb pool running dry: the library itself, linked
$(HARD_DIR)/limits: tests/hardening/limits.c include/hpmalloc.h $(LIB_SO)
	@mkdir -p $(dir $@)
	$(CC) $(HARD_CFLAGS) -o $@ $< -L$(BUILD)/lib -lhpmalloc -Wl,-rpath,$(abspath $(BUILD)/lib) -lpthread

.PHONY: check-hardening hardening-bins
hardening-bins: $(HARD_BINS)

# under the sandbox: the API tests and the stress test too
check-hardening: all $(HARD_BINS) $(API_DIR)/api-static $(API_DIR)/api-plain $(INTEG_DIR)/stress
	@BUILD=$(BUILD) bash tests/hardening/run.sh

CHECK_TARGETS += check-hardening

# --- soak (not in `make check`) ---------------------------------------------
SOAK_SECONDS ?= 60
SOAK_HUGEPAGES ?= 0
SOAK_TUNABLES ?=
$(HARD_DIR)/soak: tests/hardening/soak.c include/hpmalloc.h $(LIB_SO)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -D_GNU_SOURCE -Iinclude -o $@ $< -L$(BUILD)/lib -lhpmalloc \
	  -Wl,-rpath,$(abspath $(BUILD)/lib) -lpthread

.PHONY: check-soak
check-soak: all $(HARD_DIR)/soak
	@BUILD=$(BUILD) SOAK_SECONDS=$(SOAK_SECONDS) SOAK_HUGEPAGES=$(SOAK_HUGEPAGES) SOAK_TUNABLES=$(SOAK_TUNABLES) \
	  bash tests/hardening/soak.sh

# --- sanitizers (not in `make check`) ---------------------------------------
# The unit tests and the test build of the library they link, compiled with
# ASan and UBSan in $(BUILD)/sanitize and run as check-unit runs them (modes
# 0-2).  The library's API is renamed hpt_* in that build, so the tests and
# Criterion keep ASan's own malloc; ASan does not see inside hpmalloc's
# blocks (they come from mmap: the validator and valgrind check those), but
# it checks the tests and whatever else the allocator's code touches
# (stack, globals, the fake kernel's tables), and UBSan checks the
# allocator's arithmetic.  Any report ends the test (-fno-sanitize-recover).
# test_sysdeps defines malloc/calloc/realloc/free itself (to count calls
# into glibc's __libc_malloc), which ASan's own interposed allocator cannot
# share a process with: it runs with UBSan only, from $(BUILD)/sanitize-ub.
SANITIZE_FLAGS ?= -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
UBSAN_FLAGS    ?= -fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_BINS := $(patsubst $(BUILD)/%,$(BUILD)/sanitize/%,$(filter-out %/test_sysdeps,$(UNIT_BINS))) \
            $(BUILD)/sanitize-ub/tests/unit/test_sysdeps
.PHONY: check-sanitize
check-sanitize:
	@$(MAKE) --no-print-directory -j2 BUILD=$(BUILD)/sanitize CFLAGS="$(SANITIZE_FLAGS)" \
	  $(filter $(BUILD)/sanitize/%,$(SAN_BINS))
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/sanitize-ub CFLAGS="$(UBSAN_FLAGS)" $(BUILD)/sanitize-ub/tests/unit/test_sysdeps
	@rc=0; for m in 0 1 2; do for t in $(SAN_BINS); do echo "--- $$t (glibc.malloc.hugetlb=$$m)"; \
	  ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=1} GLIBC_TUNABLES=glibc.malloc.hugetlb=$$m \
	  HPMALLOC_TEST_FIXTURES=$(CURDIR)/tests/fixtures $$t --jobs=2 || rc=1; \
	  done; done; \
	  if [ $$rc = 0 ]; then echo "check-sanitize: passed"; else echo "check-sanitize: FAILED"; fi; exit $$rc
