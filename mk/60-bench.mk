# SPDX-License-Identifier: MIT
# make bench: the allocator comparison (not part of `make check`: measured,
# never asserted).  bench/run-bench.py runs every workload
# (bench/workloads/, bench/malloc-small.c, real programs) under glibc
# hugetlb 0/1/2, hpmalloc 0/1/2, jemalloc (and thp:always), mimalloc (and
# large pages) and tcmalloc, interleaved, through the launcher
# bench/workloads/hpb-run.c; the TLB group warm and cold, the others warm
# (bench/memstate.py), then the TLB group again with another seed to check
# that its ranking does not depend on the order (SEED_CHECK=0 skips that).
# Writes build/bench/results/latest.{md,json,svg}, or BENCH_OUT/latest.*:
# a result worth keeping is copied into bench/results by hand, with its
# command.  The full run then runs bench-stride.  See bench/README.md.
#   make bench                  full: about 2.5 hours on the project's machine
#   make bench QUICK=1          a short look (about 3 minutes): small sizes, 1 repetition,
#                               the TLB group warm only, no seed check, no 7zz, no stride
#   make bench REPS=5 BENCH_CONTENDERS=glibc-h0,hpm-h1 BENCH_WORKLOADS=tlb,xz BENCH_OUT=/tmp/r
#   make bench QUICK=1 BENCH_WORKLOADS=tlb TLB_STATES=cold SEED=7 SEED_CHECK=1
HPB_BINS := $(BUILD)/bench/hpb-run $(BUILD)/bench/small $(BUILD)/bench/tlb $(BUILD)/bench/touch \
  $(BUILD)/bench/libglibc-malloc.so

$(BUILD)/bench/hpb-run: bench/workloads/hpb-run.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -o $@ $<

$(BUILD)/bench/small $(BUILD)/bench/tlb $(BUILD)/bench/touch: $(BUILD)/bench/%: bench/workloads/%.c bench/workloads/workload.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -fno-builtin-malloc -fno-builtin-free -o $@ $< -lpthread -lm

# preloaded by the glibc contenders for programs linked with another
# allocator (redis-server), so that they measure glibc's malloc
$(BUILD)/bench/libglibc-malloc.so: bench/workloads/glibc-malloc.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -shared -fPIC -o $@ $< -ldl

.PHONY: bench bench-build
bench-build: all $(HPB_BINS) $(BUILD)/bench/malloc-small

bench:
	@bash build-aux/deps.sh bench || echo "bench: contenders or programs that are missing will be skipped"
	@$(MAKE) --no-print-directory bench-build
	@python3 bench/run-bench.py --build $(BUILD) $(if $(REPS),--reps $(REPS)) $(if $(QUICK),--quick) \
	  $(if $(BENCH_CONTENDERS),--contenders $(BENCH_CONTENDERS)) $(if $(BENCH_WORKLOADS),--workloads $(BENCH_WORKLOADS)) \
	  $(if $(BENCH_OUT),--out $(BENCH_OUT)) $(if $(TLB_STATES),--tlb-states $(TLB_STATES)) \
	  $(if $(BENCH_STATE),--state $(BENCH_STATE)) $(if $(SEED),--seed $(SEED)) \
	  $(if $(QUICK),$(if $(filter 1,$(SEED_CHECK)),--seed-check),$(if $(filter 0,$(SEED_CHECK)),,--seed-check))
	@$(if $(QUICK)$(BENCH_WORKLOADS)$(BENCH_CONTENDERS),true,$(MAKE) --no-print-directory bench-stride)

# What a first touch costs per 2 MiB, base pages and THP, right after
# another process freed the memory (warm) and once the balloon reported it
# to the host (cold); the numbers behind the two memory states of make
# bench.  Writes build/bench/results/firsttouch.{md,json} (or BENCH_OUT/);
# see bench/README.md.
#   make bench-firsttouch                 1 GiB probes, 3 repetitions, then the idle-time curve
#   make bench-firsttouch FT_MIB=2048 REPS=5 FT_IDLE=0,2,4,8 BENCH_OUT=/tmp/r
.PHONY: bench-firsttouch
bench-firsttouch: $(BUILD)/bench/touch
	@python3 bench/run-bench.py --firsttouch --build $(BUILD) --reps $(or $(REPS),3) --mib $(or $(FT_MIB),1024) \
	  $(if $(FT_IDLE),--idle $(FT_IDLE)) $(if $(BENCH_OUT),--out $(BENCH_OUT))

# The heap's layout on base pages, in TLB misses and page walks counted by
# a simulation (cachegrind with 4 KiB lines: D1 = the first-level DTLB, LL
# = the second-level TLB), not timed: the same counts on any CPU.  Default
# program: pyalloc.py at scale 0.25 (make bench's python3 workload);
# writes build/bench/results/tlbsim.{md,json} (or BENCH_OUT/).  About 2.5
# minutes a contender.
#   make bench-tlbsim
#   make bench-tlbsim TLBSIM_CONTENDERS=hpm-h0,je TLBSIM_SCALE=0.1 BENCH_OUT=/tmp/r
.PHONY: bench-tlbsim
bench-tlbsim: all
	@python3 bench/tlbsim.py --build $(BUILD) $(if $(TLBSIM_CONTENDERS),--contenders $(TLBSIM_CONTENDERS)) \
	  $(if $(TLBSIM_SCALE),--scale $(TLBSIM_SCALE)) $(if $(BENCH_OUT),--out $(BENCH_OUT))

# What the reports conclude from given runs (make check; nothing is
# timed): the seed check's verdict and the bootstrap interval it rests on,
# on made-up runs (tests/bench/test_report.py); what bench/tlbsim.py reads
# of cachegrind's summary and the geometries it accepts
# (tests/bench/test_tlbsim.py).
.PHONY: check-bench
check-bench:
	@python3 tests/bench/test_report.py
	@python3 tests/bench/test_tlbsim.py

CHECK_TARGETS += check-bench

# fork() in a process whose two threads built a heap of small objects,
# under glibc hugetlb=0, glibc hugetlb=1 and hpmalloc hugetlb=1: fork
# copies one page-table entry per 4 KiB page, one per 2 MiB huge page.
# Prints a table (bench/results/fork-epyc.md keeps one, with its command).
#   make bench-fork                     512 MiB, 9 forks a run, 5 runs a contender
#   make bench-fork FORK_MIB=2048 REPS=3
.PHONY: bench-fork
$(BUILD)/bench/forktime: bench/workloads/forktime.c bench/workloads/workload.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -fno-builtin-malloc -fno-builtin-free -o $@ $< -lpthread

bench-fork: all $(BUILD)/bench/forktime
	@FORK_MIB=$(or $(FORK_MIB),512) FORKS=$(or $(FORKS),9) REPS=$(or $(REPS),5) bash bench/run-forktime.sh $(BUILD)

# Malloc microbenchmarks (not part of `make check`): bench/malloc-small.c
# (single thread, LIFO and batch patterns) and bench/malloc-churn.c (two
# threads, cross-thread frees), each under glibc and under hpmalloc
# (LD_PRELOAD), interleaved; see bench/README.md.
#   make bench-malloc                 5 repetitions, medians and ratios, callgrind
#   make bench-malloc REPS=3 SMALL_N=10000000 CHURN_OPS=2000000 CALLGRIND_N=0 HUGETLB=1
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

