# Hardening (issue 6; tests/hardening/, tests/unit/test_faults.c).
#
#   make check-hardening   (in `make check`) misuse caught with glibc's
#                          messages (on glibc too, which validates them),
#                          hostile tunables and the setuid path, RLIMIT_AS,
#                          a hugetlb pool running dry mid-run (root)
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
HARD_BINS := $(HARD_DIR)/misuse $(HARD_DIR)/misuse-static $(HARD_DIR)/tunables_probe $(HARD_DIR)/limits

# plain: runs on glibc and under LD_PRELOAD
$(HARD_DIR)/misuse: tests/hardening/misuse.c
	@mkdir -p $(dir $@)
	$(CC) $(HARD_CFLAGS) $(HARD_MISUSE_FLAGS) -o $@ $< -lpthread

$(HARD_DIR)/misuse-static: tests/hardening/misuse.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(HARD_CFLAGS) $(HARD_MISUSE_FLAGS) -static -o $@ $< $(LIB_A) -lpthread

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

check-hardening: all $(HARD_BINS)
	@BUILD=$(BUILD) bash tests/hardening/run.sh

CHECK_TARGETS += check-hardening

# --- soak (not in `make check`) ---------------------------------------------
SOAK_SECONDS ?= 60
SOAK_HUGEPAGES ?= 0
$(HARD_DIR)/soak: tests/hardening/soak.c include/hpmalloc.h $(LIB_SO)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -D_GNU_SOURCE -Iinclude -o $@ $< -L$(BUILD)/lib -lhpmalloc \
	  -Wl,-rpath,$(abspath $(BUILD)/lib) -lpthread

.PHONY: check-soak
check-soak: all $(HARD_DIR)/soak
	@BUILD=$(BUILD) SOAK_SECONDS=$(SOAK_SECONDS) SOAK_HUGEPAGES=$(SOAK_HUGEPAGES) bash tests/hardening/soak.sh
