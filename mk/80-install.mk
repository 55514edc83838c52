# SPDX-License-Identifier: MIT
# check-install: make install into a scratch DESTDIR, then the installed
# tree on its own: the versioned library and its links, a program built
# with the pkg-config file, a preloaded program, hpm recording and
# replaying with its installed recorder and allocator, and the man pages
# rendered without warnings (tests/install/run-install.sh).
.PHONY: check-install
check-install: all
	@BUILD=$(BUILD) MAKE="$(MAKE)" CC="$(CC)" VERSION=$(VERSION) SONAME=$(LIB_SONAME) bash tests/install/run-install.sh

CHECK_TARGETS += check-install
