# SPDX-License-Identifier: MIT
# API tests (tests/api/): glibc malloc semantics through the public API,
# a plain-C program with its own TAP-like harness (no Criterion), built
#   api-dyn     -DHPT_LINKED, linked with -lhpmalloc (rpath to $(BUILD)/lib)
#   api-static  -DHPT_LINKED, -static with $(LIB_A)
#   api-plain   linked with nothing: run under LD_PRELOAD and on glibc
#   namesake    -static with $(LIB_A) and a generated file defining, as the
#               program's own globals, every internal name of $(LIB_OBJS)
#               (tests/api/namesake-gen.sh)
# and run by tests/api/run-api.sh, which also checks the exported symbols
# of both libraries.
API_DIR    := $(BUILD)/tests/api
API_SRC    := tests/api/api_test.c
API_HDRS   := tests/api/tap.h include/hpmalloc.h
API_CFLAGS := -std=gnu11 -O1 -g -Wall -Wextra -D_GNU_SOURCE -Iinclude -Itests/api
API_BINS   := $(API_DIR)/api-dyn $(API_DIR)/api-static $(API_DIR)/api-plain $(API_DIR)/namesake

$(API_DIR)/api-dyn: $(API_SRC) $(API_HDRS) $(LIB_SO)
	@mkdir -p $(dir $@)
	$(CC) $(API_CFLAGS) -DHPT_LINKED=1 -o $@ $(API_SRC) -L$(BUILD)/lib -lhpmalloc \
	  -Wl,-rpath,$(abspath $(BUILD)/lib) -lpthread

$(API_DIR)/api-static: $(API_SRC) $(API_HDRS) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(API_CFLAGS) -DHPT_LINKED=1 -static -o $@ $(API_SRC) $(LIB_A) -lpthread

$(API_DIR)/api-plain: $(API_SRC) $(API_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(API_CFLAGS) -o $@ $(API_SRC) -lpthread

$(API_DIR)/namesake-names.c: tests/api/namesake-gen.sh $(LIB_A) $(LIB_OBJS)
	@mkdir -p $(dir $@)
	bash tests/api/namesake-gen.sh $(LIB_A) $(LIB_OBJS) > $@.tmp && mv $@.tmp $@

# -w: the generated definitions may clash with builtins' prototypes on purpose
$(API_DIR)/namesake: tests/api/namesake.c $(API_DIR)/namesake-names.c include/hpmalloc.h $(LIB_A)
	$(CC) -std=gnu11 -O1 -g -fno-builtin -w -c -o $(API_DIR)/namesake-names.o $(API_DIR)/namesake-names.c
	$(CC) $(API_CFLAGS) -static -o $@ $< $(API_DIR)/namesake-names.o $(LIB_A) -lpthread

.PHONY: check-api api-bins
api-bins: $(API_BINS)

check-api: $(API_BINS) $(LIB_SO) $(LIB_A)
	@bash tests/api/run-api.sh $(BUILD)

CHECK_TARGETS += check-api
