# check-hugepages: huge-page coverage of every path, modes 1 and 2, and the
# statistics' huge-page figures against smaps (tests/hugepages).
$(BUILD)/tests/hugepages/coverage $(BUILD)/tests/hugepages/backed: $(BUILD)/tests/hugepages/%: tests/hugepages/%.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -o $@ $< -lpthread -ldl

.PHONY: check-hugepages
check-hugepages: $(LIB_SO) $(BUILD)/tests/hugepages/coverage $(BUILD)/tests/hugepages/backed
	@BUILD=$(BUILD) bash tests/hugepages/run.sh

CHECK_TARGETS += check-hugepages
