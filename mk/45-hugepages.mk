# check-hugepages: huge-page coverage of every path, modes 1 and 2 (tests/hugepages).
$(BUILD)/tests/hugepages/coverage: tests/hugepages/coverage.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -o $@ $< -lpthread -ldl

.PHONY: check-hugepages
check-hugepages: $(LIB_SO) $(BUILD)/tests/hugepages/coverage
	@BUILD=$(BUILD) bash tests/hugepages/run.sh

CHECK_TARGETS += check-hugepages
