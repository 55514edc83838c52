# SPDX-License-Identifier: MIT
# Stride microbenchmarks (not part of `make check`): bench/stride/stride.c,
# the seeds' span test (16 MB of sequential numbers summed with spans
# 1..4096) and segment-stress stride (a line every 256 MiB + 4 KiB, and
# every 2 MiB + 4 KiB), each under base pages, THP and hugetlbfs,
# interleaved and repeated; medians go to build/bench/results/stride.md
# (BENCH_OUT/stride.md, or STRIDE_OUT, when given).  As
# root the script sizes the hugetlb pool and restores it.  See
# bench/stride/README.md.
#   make bench-stride
#   make bench-stride STRIDE_REPS=3 STRIDE_OUT=/tmp/stride.md
STRIDE_BIN    := $(BUILD)/bench/stride/stride
# -fno-tree-vectorize: every span runs the same scalar loop, so the
# figures differ by memory behaviour, not by code generation.
STRIDE_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -D_GNU_SOURCE -fno-tree-vectorize

$(STRIDE_BIN): bench/stride/stride.c
	@mkdir -p $(dir $@)
	$(CC) $(STRIDE_CFLAGS) -o $@ $<

.PHONY: bench-stride
bench-stride: $(STRIDE_BIN)
	@REPS=$(or $(STRIDE_REPS),5) OUT=$(or $(STRIDE_OUT),$(or $(BENCH_OUT),$(BUILD)/bench/results)/stride.md) \
	  RAW=$(BUILD)/bench/stride/raw.txt \
	  bash bench/stride/run-stride.sh $(STRIDE_BIN)
