# SPDX-License-Identifier: MIT
# Static analysis: `make analyze` runs gcc -fanalyzer, cppcheck and
# clang-tidy over malloc/, tunables/, sysdeps/ and tools/ (when it exists)
# and fails on any finding.  Configuration: .clang-tidy (checks, and why
# some are left out), ANALYZE_CPPCHECK below.  A finding that is wrong is
# suppressed at its line (NOLINT(check) / cppcheck-suppress id) with a
# comment saying why; real ones are fixed.  Every source file is analysed,
# every architecture's sysdeps included.  Logs: $(BUILD)/analyze/.
# Not part of `make check`; needs gcc >= 12, cppcheck and clang-tidy
# (build-aux/deps.sh analyze).
ANALYZE_DIRS    := $(wildcard malloc tunables sysdeps tools)
ANALYZE_SRCS    := $(sort $(shell find $(ANALYZE_DIRS) -name '*.c'))
ANALYZE_DIR     := $(BUILD)/analyze
ANALYZE_DEFS    := -D_GNU_SOURCE $(VALGRIND_CFLAGS)
ANALYZE_INC     := $(INCLUDES)
ANALYZE_GCC     := $(patsubst %.c,$(ANALYZE_DIR)/gcc/%.log,$(ANALYZE_SRCS))
ANALYZE_TIDY    := $(patsubst %.c,$(ANALYZE_DIR)/tidy/%.log,$(ANALYZE_SRCS))
# Per-directory clang-tidy configurations (e.g. tools/hpm/.clang-tidy).
ANALYZE_TIDY_CFG := $(sort $(shell find $(ANALYZE_DIRS) -name .clang-tidy))
ANALYZE_CPPCHECK := cppcheck -q --std=c11 --enable=warning,style,performance,portability \
	--inline-suppr --error-exitcode=1 --template='{file}:{line}: {severity}: {id}: {message}' \
	$(ANALYZE_INC) -D__linux__ -D__x86_64__ -D__GNUC__ $(ANALYZE_DEFS)

.PHONY: analyze analyze-gcc analyze-cppcheck analyze-tidy analyze-format analyze-headers analyze-deps format
analyze: analyze-deps
	@find $(ANALYZE_DIR) -name '*.bad' -delete 2>/dev/null; rm -f $(ANALYZE_DIR)/format.log $(ANALYZE_DIR)/headers.log; \
	  $(MAKE) --no-print-directory -k analyze-gcc analyze-cppcheck analyze-tidy analyze-format analyze-headers; rc=$$?; \
	  n=$$({ find $(ANALYZE_DIR) -name '*.bad' -exec cat {} +; cat $(ANALYZE_DIR)/cppcheck.log $(ANALYZE_DIR)/format.log $(ANALYZE_DIR)/headers.log; } \
	    2>/dev/null | grep -c ': warning:\|: error:\|: style:\|: portability:\|: performance:'); \
	  echo "analyze: $(words $(ANALYZE_SRCS)) files, gcc -fanalyzer + cppcheck + clang-tidy + clang-format: $$n findings"; \
	  [ $$rc -eq 0 ] && [ $$n -eq 0 ]

analyze-deps:
	@bash build-aux/deps.sh analyze

# gcc -fanalyzer on each file, as the library is built (-O2: the analyzer
# sees through the inline helpers).  The log must be empty.
# malloc.c defines malloc, free and realloc: the analyzer models them as
# libc's, so realloc(p, 0) calling free(p) makes free's own body look like
# a use after free, and realloc calling malloc a leak.  Those two checks
# are off for that file alone; every other check stays on.
$(ANALYZE_DIR)/gcc/malloc/malloc.log: ANALYZE_GCC_EXTRA := -Wno-analyzer-use-after-free -Wno-analyzer-malloc-leak
$(ANALYZE_DIR)/gcc/%.log: %.c
	@mkdir -p $(dir $@)
	@if gcc -std=gnu11 $(WARN) $(ANALYZE_INC) -I$(dir $<) $(ANALYZE_DEFS) -O2 -fPIC -fanalyzer $(ANALYZE_GCC_EXTRA) \
	     -c $< -o /dev/null >$@.tmp 2>&1 && ! grep -q 'warning:\|error:' $@.tmp; then mv $@.tmp $@; rm -f $@.bad; \
	 else cat $@.tmp; mv $@.tmp $@.bad; exit 1; fi

analyze-gcc: $(ANALYZE_GCC)

# cppcheck over all of it, as the library and as the test build.
analyze-cppcheck:
	@mkdir -p $(ANALYZE_DIR)
	@rc=0; { $(ANALYZE_CPPCHECK) $(ANALYZE_DIRS) && \
	  $(ANALYZE_CPPCHECK) -DHP_TEST_BUILD=1 $(ANALYZE_DIRS); } >$(ANALYZE_DIR)/cppcheck.log 2>&1 || rc=1; \
	  cat $(ANALYZE_DIR)/cppcheck.log; exit $$rc

# clang-tidy on each file with the checks in .clang-tidy (and a directory's
# own .clang-tidy, which inherits it); any finding fails.
$(ANALYZE_DIR)/tidy/%.log: %.c .clang-tidy $(ANALYZE_TIDY_CFG)
	@mkdir -p $(dir $@)
	@if clang-tidy --quiet --warnings-as-errors='*' $< -- -std=gnu11 $(ANALYZE_INC) -I$(dir $<) $(ANALYZE_DEFS) \
	     >$@.tmp 2>$@.err; then mv $@.tmp $@; rm -f $@.err $@.bad; \
	 else cat $@.tmp; grep -v 'warnings\? generated\|^Error while processing\|treated as error' $@.err; \
	   mv $@.tmp $@.bad; rm -f $@.err; exit 1; fi

analyze-tidy: $(ANALYZE_TIDY)

# The sources and headers of the analysed directories and include/ follow
# .clang-format: each difference is an error line in format.log.
FORMAT_SRCS := $(sort $(shell find $(ANALYZE_DIRS) include -name '*.[ch]'))
analyze-format:
	@mkdir -p $(ANALYZE_DIR)
	@clang-format --dry-run --Werror $(FORMAT_SRCS) >$(ANALYZE_DIR)/format.log 2>&1; rc=$$?; \
	  cat $(ANALYZE_DIR)/format.log; [ $$rc -eq 0 ] || echo "analyze-format: run 'make format' to apply .clang-format"; exit $$rc

format:
	clang-format -i $(FORMAT_SRCS)

# Every header of the library compiles on its own, in the library build and
# in the test build: none works only after another was included.
HEADER_SRCS := $(sort $(wildcard malloc/*.h tunables/*.h sysdeps/generic/*.h sysdeps/posix/*.h include/*.h))
analyze-headers:
	@mkdir -p $(ANALYZE_DIR)
	@: >$(ANALYZE_DIR)/headers.log; for h in $(HEADER_SRCS); do for d in "" -DHP_TEST_BUILD=1; do \
	  printf '#include "%s"\n' $$(basename $$h) | $(CC) -std=gnu11 $(WARN) $(INCLUDES) $(ANALYZE_DEFS) $$d \
	    -fsyntax-only -x c - >/dev/null 2>&1 || \
	    echo "$$h:1: error: does not compile on its own ($$d): include what it uses" >>$(ANALYZE_DIR)/headers.log; \
	  done; done; cat $(ANALYZE_DIR)/headers.log; [ ! -s $(ANALYZE_DIR)/headers.log ]
