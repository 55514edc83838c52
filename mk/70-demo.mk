# SPDX-License-Identifier: MIT
# make demo: the TLB-heavy workload (bench/demo) under glibc and hpmalloc.
DEMO_BIN := $(BUILD)/bench/tlbdemo

$(DEMO_BIN): bench/demo/tlbdemo.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -o $@ $< -lpthread

.PHONY: demo
demo:
	@bash build-aux/deps.sh demo
	@$(MAKE) --no-print-directory $(LIB_SO) $(DEMO_BIN)
	@BUILD=$(BUILD) bash bench/demo/run-demo.sh

# make bench-tlb: the issue's comparison: a 2.8 GB heap of 100-byte objects
# built by two threads, random reads, against glibc hugetlb=1 and jemalloc
# thp:always.  Needs `bash build-aux/deps.sh bench`.
.PHONY: bench-tlb
bench-tlb: $(LIB_SO) $(DEMO_BIN)
	@BUILD=$(BUILD) DEMO_MB=$${DEMO_MB:-2800} DEMO_REPS=$${DEMO_REPS:-5} \
	  DEMO_CONFIGS="$${DEMO_CONFIGS:-glibc:1 glibc:0 hpmalloc:0 hpmalloc:1 jemalloc:thp}" bash bench/demo/run-demo.sh
