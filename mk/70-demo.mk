# make demo: the TLB-heavy workload (bench/demo) under glibc and hpmalloc.
DEMO_BIN := $(BUILD)/bench/tlbdemo

$(DEMO_BIN): bench/demo/tlbdemo.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -o $@ $< -lpthread

.PHONY: demo
demo: $(LIB_SO) $(DEMO_BIN)
	@BUILD=$(BUILD) bash bench/demo/run-demo.sh
