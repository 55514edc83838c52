# SPDX-License-Identifier: MIT
# Integration tests (tests/integration/): real programs under LD_PRELOAD,
# the multi-threaded stress test, static linking, and valgrind's memcheck
# over hpmalloc.  `make check-integration` runs all four suites (each even
# after another failed); check-programs, check-stress, check-static and
# check-valgrind run one.  HPT_STRESS_SECS sets the stress run per mode (3 s).
INTEG_DIR    := $(BUILD)/tests/integration
INTEG_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -D_GNU_SOURCE -Iinclude
INTEG_VG     := $(INTEG_DIR)/vg-leak $(INTEG_DIR)/vg-overflow $(INTEG_DIR)/vg-uses-hpm
INTEG_BINS   := $(INTEG_DIR)/stress $(INTEG_VG)

# stress links with nothing: it runs under LD_PRELOAD (and on glibc, to check the test).
$(INTEG_DIR)/stress: tests/integration/stress.c include/hpmalloc.h
	@mkdir -p $(dir $@)
	$(CC) $(INTEG_CFLAGS) -o $@ $< -lpthread

# The memcheck programs link with -lhpmalloc; -O0 keeps the deliberate errors.
$(INTEG_DIR)/vg-%: tests/integration/vg-%.c include/hpmalloc.h $(LIB_SO)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O0 -g -Wall -Wno-array-bounds -Wno-use-after-free -D_GNU_SOURCE -Iinclude -o $@ $< \
	  -L$(BUILD)/lib -lhpmalloc -Wl,-rpath,$(abspath $(BUILD)/lib)

.PHONY: check-integration check-programs check-stress check-static check-valgrind integration-bins
integration-bins: $(INTEG_BINS)

check-integration: all $(INTEG_BINS) api-bins
	@bash tests/integration/run-integration.sh $(BUILD)
check-programs: all
	@bash tests/integration/run-integration.sh $(BUILD) programs
check-stress: all $(INTEG_DIR)/stress
	@bash tests/integration/run-integration.sh $(BUILD) stress
check-static: all
	@bash tests/integration/run-integration.sh $(BUILD) static
check-valgrind: all $(INTEG_VG) api-bins
	@bash tests/integration/run-integration.sh $(BUILD) valgrind

CHECK_TARGETS += check-integration
