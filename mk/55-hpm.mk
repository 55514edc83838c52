# SPDX-License-Identifier: MIT
# The hpm tool (tools/hpm/): build/bin/hpm and the recorder
# build/lib/libhpmtrace.so, both part of the default build; `make check-hpm`
# runs the Criterion tests of the trace codec and of the command-line
# parser, then tests/hpm/run-hpm.sh (record/replay round trips on real
# programs, byte-exact re-encoding, hostile traces, usage errors,
# analyze/compare/tune output).
HPM_DIR       := tools/hpm
HPM_BIN       := $(BUILD)/bin/hpm
HPM_TRACE_SO  := $(BUILD)/lib/libhpmtrace.so
HPM_CFLAGS    := -std=gnu11 -O2 -g $(WARN) -D_GNU_SOURCE -I$(HPM_DIR) -Itunables -Isysdeps/generic $(CPPFLAGS) $(CFLAGS)
# tunables/tunables.c is compiled in (a leaf of the library: no allocation,
# no system call): hpm checks --tunables against the library's own table.
HPM_SRCS      := $(filter-out $(HPM_DIR)/recorder.c,$(sort $(wildcard $(HPM_DIR)/*.c))) tunables/tunables.c
HPM_HDRS      := $(wildcard $(HPM_DIR)/*.h) tunables/tunables.h
HPM_TESTPROG  := $(BUILD)/tests/hpm/xthread
HPM_LEAKY     := $(BUILD)/tests/hpm/leaky
HPM_ENDING    := $(BUILD)/tests/hpm/ending
HPM_UNIT      := $(BUILD)/tests/hpm/test_trace
HPM_UNIT_ARGS := $(BUILD)/tests/hpm/test_args
HPM_UNIT_STATS := $(BUILD)/tests/hpm/test_stats

# Installed, hpm finds its recorder, the allocator and FORMAT.md relative
# to its own directory (so a DESTDIR or moved tree works): the paths from
# BINDIR to LIBDIR and DOCDIR are compiled in, and a change of them (not of
# PREFIX alone) rebuilds hpm.  In the build tree it uses build/lib/.
HPM_LIBDIR_REL := $(shell realpath -m --relative-to=$(BINDIR) $(LIBDIR))
HPM_PKGLIB_REL := $(shell realpath -m --relative-to=$(LIBDIR) $(PKGLIBDIR))
HPM_DOCDIR_REL := $(shell realpath -m --relative-to=$(BINDIR) $(DOCDIR))
HPM_PATHS      := $(BUILD)/hpm-paths.txt
HPM_PATH_DEFS  := -DHPM_LIBDIR_REL='"$(HPM_LIBDIR_REL)"' -DHPM_RECORDER_REL='"$(HPM_PKGLIB_REL)/libhpmtrace.so"' \
                  -DHPM_SONAME='"$(LIB_SONAME)"' -DHPM_DOCDIR_REL='"$(HPM_DOCDIR_REL)"'

$(HPM_PATHS): FORCE
	@mkdir -p $(dir $@)
	@echo "$(HPM_LIBDIR_REL) $(HPM_PKGLIB_REL) $(LIB_SONAME) $(HPM_DOCDIR_REL)" | cmp -s - $@ || \
	  echo "$(HPM_LIBDIR_REL) $(HPM_PKGLIB_REL) $(LIB_SONAME) $(HPM_DOCDIR_REL)" > $@

$(HPM_BIN): $(HPM_SRCS) $(HPM_HDRS) $(HPM_PATHS)
	@mkdir -p $(dir $@)
	$(CC) $(HPM_CFLAGS) $(HPM_PATH_DEFS) $(LDFLAGS) -o $@ $(HPM_SRCS) -ldw -lelf -lpthread -lm

# The recorder: hidden by default, only the malloc API (and the hooks it
# needs: pthread_create, exec*, _exit) exported.
$(HPM_TRACE_SO): $(HPM_DIR)/recorder.c $(HPM_DIR)/trace.c $(HPM_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(HPM_CFLAGS) -fPIC -fvisibility=hidden -ftls-model=initial-exec -fno-omit-frame-pointer -shared $(LDFLAGS) \
	  -o $@ $(HPM_DIR)/recorder.c $(HPM_DIR)/trace.c -ldl -lpthread

$(HPM_TESTPROG): tests/hpm/xthread.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -fno-builtin -Wall -Wextra -D_GNU_SOURCE -o $@ $< -lpthread

# The program with a known leak that check-hpm records with --stacks:
# debug information for file:line, frame pointers for --unwind fp.
$(HPM_LEAKY): tests/hpm/leaky.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O0 -g -fno-omit-frame-pointer -Wall -Wextra -o $@ $<

# The program whose leak is reached through inlined functions and that ends
# as asked (exit, SIGKILL, SIGPIPE, SIGTERM): -O2 -g so that the inlining
# happens and DWARF records it.
$(HPM_ENDING): tests/hpm/ending.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -o $@ $<

# Criterion tests of the trace codec, the command-line parser and the
# statistics.
$(HPM_UNIT): tests/hpm/test_trace.c $(HPM_DIR)/trace.c $(HPM_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(HPM_CFLAGS) -o $@ $< $(HPM_DIR)/trace.c -lcriterion

$(HPM_UNIT_ARGS): tests/hpm/test_args.c $(HPM_DIR)/args.c $(HPM_DIR)/util.c $(HPM_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(HPM_CFLAGS) -o $@ $< $(HPM_DIR)/args.c $(HPM_DIR)/util.c -lcriterion

$(HPM_UNIT_STATS): tests/hpm/test_stats.c $(HPM_DIR)/stats.c $(HPM_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(HPM_CFLAGS) -o $@ $< $(HPM_DIR)/stats.c -lcriterion -lm

.PHONY: hpm-bins check-hpm
hpm-bins: $(HPM_BIN) $(HPM_TRACE_SO)
all: hpm-bins

check-hpm: hpm-bins $(LIB_SO) $(HPM_TESTPROG) $(HPM_LEAKY) $(HPM_ENDING) $(HPM_UNIT) $(HPM_UNIT_ARGS) $(HPM_UNIT_STATS)
	@$(HPM_UNIT) --jobs=2 && $(HPM_UNIT_ARGS) --jobs=2 && $(HPM_UNIT_STATS) --jobs=2 && \
	  BUILD=$(BUILD) bash tests/hpm/run-hpm.sh

CHECK_TARGETS += check-hpm

# make demo-hpm (also run by `make demo`): a bundled trace replayed under
# glibc and hpmalloc, hugetlb 0 and 1: time, coverage, TLB model; an SVG chart.
HPM_DEMO_TRACE ?= tests/hpm/traces/python3-malloc.hpmt
.PHONY: demo-hpm
demo-hpm: hpm-bins $(LIB_SO)
	@echo "=== hpm compare $(HPM_DEMO_TRACE) (chart: $(BUILD)/hpm-compare.svg)"
	@$(HPM_BIN) compare $(HPM_DEMO_TRACE) --config glibc --config glibc:glibc.malloc.hugetlb=1 \
	  --config hpmalloc --config hpmalloc:glibc.malloc.hugetlb=1 --touch full --reps 3 \
	  --svg $(BUILD)/hpm-compare.svg
demo: demo-hpm

# make install also installs hpm (BINDIR), the recorder (PKGLIBDIR, private
# to hpm: LIBDIR/hpmalloc/) and the trace format (DOCDIR/FORMAT.md).
.PHONY: install-hpm
install-hpm: hpm-bins
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(DOCDIR)
	install -m 755 $(HPM_BIN) $(DESTDIR)$(BINDIR)/hpm
	install -m 755 $(HPM_TRACE_SO) $(DESTDIR)$(PKGLIBDIR)/libhpmtrace.so
	install -m 644 $(HPM_DIR)/FORMAT.md $(DESTDIR)$(DOCDIR)/FORMAT.md
install: install-hpm
