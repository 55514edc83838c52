# SPDX-License-Identifier: MIT
# Coverage: `make coverage` builds an instrumented copy of everything
# (gcc --coverage, -O0) under COV_BUILD (build-cov), runs the whole test
# suite against it -- the unit tests on the test build (libhpmalloc-test.a),
# the API, glibc, integration, huge-page and install suites on the real
# library (libhpmalloc.so preloaded or linked, libhpmalloc.a) -- and combines
# both builds' counters with lcov into one report:
#   $(COV_BUILD)/coverage/index.html    genhtml's report (lines, branches, functions)
#   $(COV_BUILD)/coverage/hpmalloc.info the lcov tracefile
# and prints line and branch rates per directory (malloc/, tunables/,
# sysdeps/...).  Counters are reset first, so each run measures one run
# of the suites.  COV_SUITES picks the suites (default: all of make check
# but check-deb, whose packages are built with Debian's flags, not these).
# Not part of `make check`; needs lcov (build-aux/deps.sh coverage).
# The -O0 instrumented build runs several times slower: glibc's tests get
# TIMEOUTFACTOR=5 (tst-malloc_info took over its 20 s at 1).
COV_BUILD  ?= build-cov
COV_SUITES ?= $(filter-out check-deb,$(CHECK_TARGETS))
COV_DIR    := $(COV_BUILD)/coverage
# -fprofile-update=atomic: threads count without losing (or wrapping)
# updates.  -O0 for both builds (CFLAGS comes last, after the test build's
# -O1), so that each line's count is its own.
COV_ENV    := BUILD=$(COV_BUILD) CC="gcc --coverage -fprofile-update=atomic" OPT="-O0 -g" CFLAGS="-O0"
COV_LCOV   := lcov --quiet --rc lcov_branch_coverage=1

.PHONY: coverage coverage-report
coverage:
	@bash build-aux/deps.sh coverage
	@mkdir -p $(COV_BUILD) && find $(COV_BUILD) -name '*.gcda' -delete
	@echo '$(COV_ENV)' | cmp -s - $(COV_BUILD)/.cov-env || { rm -rf $(COV_BUILD)/obj $(COV_BUILD)/test-obj \
	  $(COV_BUILD)/lib $(COV_BUILD)/tests; echo '$(COV_ENV)' > $(COV_BUILD)/.cov-env; }  # flags changed: rebuild
	@$(COV_ENV) $(MAKE) --no-print-directory all $(COV_BUILD)/lib/libhpmalloc-test.a >/dev/null
	@$(COV_ENV) TIMEOUTFACTOR=$(or $(TIMEOUTFACTOR),5) MAKE="$(MAKE)" bash build-aux/run-checks.sh $(COV_SUITES); rc=$$?; \
	  $(MAKE) --no-print-directory coverage-report COV_BUILD=$(COV_BUILD) || rc=1; \
	  [ $$rc -eq 0 ] || echo "coverage: some suites failed (the report covers what ran)"; exit $$rc

# Only the report, from the counters already in $(COV_BUILD).
coverage-report:
	@mkdir -p $(COV_DIR)
	@$(COV_LCOV) --capture --directory $(COV_BUILD) --base-directory $(CURDIR) \
	  --output-file $(COV_DIR)/all.info 2>$(COV_DIR)/lcov.err || { cat $(COV_DIR)/lcov.err; exit 1; }
	@$(COV_LCOV) --extract $(COV_DIR)/all.info '$(CURDIR)/malloc/*' '$(CURDIR)/tunables/*' \
	  '$(CURDIR)/sysdeps/*' '$(CURDIR)/tools/*' --output-file $(COV_DIR)/hpmalloc.info
	@genhtml --quiet --branch-coverage --legend --title hpmalloc --prefix $(CURDIR) \
	  --output-directory $(COV_DIR) $(COV_DIR)/hpmalloc.info
	@bash build-aux/coverage-summary.sh $(COV_DIR)/hpmalloc.info $(CURDIR)
	@echo "coverage: report in $(COV_DIR)/index.html"
