# Malloc microbenchmarks (not part of `make check`): bench/malloc-small.c
# (single thread, LIFO and batch patterns) and bench/malloc-churn.c (two
# threads, cross-thread frees), each under glibc and under hpmalloc
# (LD_PRELOAD), interleaved; see bench/README.md.
#   make bench                        5 repetitions, medians and ratios, callgrind
#   make bench REPS=3 SMALL_N=10000000 CHURN_OPS=2000000 CALLGRIND_N=0 HUGETLB=1
BENCH_DIR    := $(BUILD)/bench
BENCH_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -D_GNU_SOURCE -fno-builtin-malloc -fno-builtin-free
MALLOC_BENCH_BINS := $(BENCH_DIR)/malloc-small $(BENCH_DIR)/malloc-churn

$(BENCH_DIR)/malloc-%: bench/malloc-%.c
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< -lpthread

.PHONY: bench-malloc
bench-malloc: all $(MALLOC_BENCH_BINS)
	@REPS=$(or $(REPS),5) SMALL_N=$(or $(SMALL_N),50000000) CHURN_OPS=$(or $(CHURN_OPS),10000000) \
	  CALLGRIND_N=$(or $(CALLGRIND_N),1000000) HUGETLB=$(HUGETLB) bash bench/run-malloc-bench.sh $(BUILD)

bench: bench-malloc
