# SPDX-License-Identifier: MIT
# make deb: the Debian packages libhpmalloc0, libhpmalloc-dev and
# hpmalloc-tools (debian/), built with dpkg-buildpackage -b -us -uc from a
# copy of the tree, into $(BUILD)/deb/, then checked with lintian (an error
# fails; build-aux/make-deb.sh).  make check-deb builds them, installs them
# with dpkg into a scratch root and runs a preloaded program, a linked one
# and hpm from there (tests/install/check-deb.sh); it skips, saying why,
# where dpkg-buildpackage, debhelper, scdoc or lintian is missing.
DEB_OUT := $(BUILD)/deb

.PHONY: deb check-deb
deb:
	@bash build-aux/make-deb.sh $(DEB_OUT) $(VERSION)

check-deb:
	@BUILD=$(BUILD) MAKE="$(MAKE)" VERSION=$(VERSION) SONAME=$(LIB_SONAME) bash tests/install/check-deb.sh

CHECK_TARGETS += check-deb
