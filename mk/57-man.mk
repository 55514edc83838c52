# SPDX-License-Identifier: MIT
# Man pages (man/): hpm(1) and hpmalloc(7), written in scdoc's format and
# built into $(BUILD)/man/ by `make` when scdoc is installed (Debian:
# scdoc; without it the library and hpm still build, and make install says
# what it left out).  make install puts them in MANDIR/manN/.
# check-install renders them with man --warnings and compares them with the
# sources: every hpm command and option, every tunable, environment alias,
# mallopt parameter, stats field and malloc_info element.
SCDOC     ?= scdoc
MAN_SRCS  := $(sort $(wildcard man/*.scd))
MAN_PAGES := $(patsubst man/%.scd,$(BUILD)/man/%,$(MAN_SRCS))
HAVE_SCDOC := $(shell command -v $(SCDOC) 2>/dev/null)

# @VERSION@ is the library's version; .nh after .TH (which turns
# hyphenation back on) keeps names like MALLOC_ARENA_TEST whole.
$(BUILD)/man/%: man/%.scd include/hpmalloc.h
	@command -v $(SCDOC) >/dev/null || { echo "man: $(SCDOC) not found (Debian: apt-get install scdoc)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	sed 's/@VERSION@/$(VERSION)/g' $< | $(SCDOC) | sed '/^\.TH /a .nh' > $@.tmp && mv $@.tmp $@

.PHONY: man install-man
man: $(MAN_PAGES)

ifneq ($(HAVE_SCDOC),)
all: man
install-man: man
	@for p in $(MAN_PAGES); do s=$${p##*.}; \
	  echo "install -m 644 $$p $(DESTDIR)$(MANDIR)/man$$s/"; \
	  install -d $(DESTDIR)$(MANDIR)/man$$s && install -m 644 $$p $(DESTDIR)$(MANDIR)/man$$s/ || exit 1; done
else
install-man:
	@echo "install: man pages not installed: $(SCDOC) not found (Debian: apt-get install scdoc)" >&2
endif
install: install-man
