# SPDX-License-Identifier: MIT
# check-hugepages: huge-page coverage of every path, modes 1 and 2, the
# statistics' huge-page figures against smaps, and a static program in an
# empty root (tests/hugepages).
$(BUILD)/tests/hugepages/coverage $(BUILD)/tests/hugepages/backed: $(BUILD)/tests/hugepages/%: tests/hugepages/%.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -o $@ $< -lpthread -ldl

# linked statically: run in an empty root (no /proc, no /sys), see run.sh
$(BUILD)/tests/hugepages/emptyroot: tests/hugepages/emptyroot.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -static -o $@ $< $(LIB_A) -lpthread

.PHONY: check-hugepages
check-hugepages: $(LIB_SO) $(BUILD)/tests/hugepages/coverage $(BUILD)/tests/hugepages/backed \
                 $(BUILD)/tests/hugepages/emptyroot
	@BUILD=$(BUILD) bash tests/hugepages/run.sh

CHECK_TARGETS += check-hugepages
