# Unit tests (Criterion): tests/unit/test_*.c, each linked against the test
# build of the library (internals visible, public API renamed hpt_*).
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))

$(BUILD)/tests/unit/%: tests/unit/%.c $(LIB_TEST)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -Itests/unit -o $@ $< $(LIB_TEST) -lcriterion -lpthread

.PHONY: check-unit
check-unit: $(UNIT_BINS)
	@rc=0; for t in $(UNIT_BINS); do echo "--- $$t"; HPMALLOC_TEST_FIXTURES=$(CURDIR)/tests/fixtures $$t --jobs=2 || rc=1; done; exit $$rc

CHECK_TARGETS += check-unit
