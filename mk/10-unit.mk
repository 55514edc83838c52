# SPDX-License-Identifier: MIT
# Unit tests (Criterion): tests/unit/test_*.c, each linked against the test
# build of the library (internals visible, public API renamed hpt_*).
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))

$(BUILD)/tests/unit/%: tests/unit/%.c $(LIB_TEST) $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -Itests/unit -o $@ $< $(LIB_TEST) -lcriterion -lpthread

.PHONY: check-unit
# Run every unit test in each huge-page mode (the test build reads
# GLIBC_TUNABLES as the library does).
check-unit: $(UNIT_BINS)
	@rc=0; for m in 0 1 2; do for t in $(UNIT_BINS); do echo "--- $$t (glibc.malloc.hugetlb=$$m)"; \
	  GLIBC_TUNABLES=glibc.malloc.hugetlb=$$m HPMALLOC_TEST_FIXTURES=$(CURDIR)/tests/fixtures $$t --jobs=2 || rc=1; \
	  done; done; exit $$rc

CHECK_TARGETS += check-unit
