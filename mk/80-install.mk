# check-install: make install into a scratch DESTDIR installs the libraries,
# the header and a pkg-config file with which a program builds and runs on
# hpmalloc.
.PHONY: check-install
check-install: all
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	$(MAKE) --no-print-directory install PREFIX=/opt/hpm DESTDIR=$$d >/dev/null && \
	for f in lib/libhpmalloc.so lib/libhpmalloc.a include/hpmalloc.h lib/pkgconfig/hpmalloc.pc; do \
	  test -f $$d/opt/hpm/$$f || { echo "FAIL install: $$f missing"; exit 1; }; done && \
	flags=$$(sed -e "s|^prefix=.*|prefix=$$d/opt/hpm|" -e "s|^libdir=.*|libdir=$$d/opt/hpm/lib|" \
	  -e "s|^includedir=.*|includedir=$$d/opt/hpm/include|" $$d/opt/hpm/lib/pkgconfig/hpmalloc.pc > $$d/hpm.pc && \
	  PKG_CONFIG_PATH=$$d pkg-config --cflags --libs hpm) && \
	printf '#include <hpmalloc.h>\n#include <stdio.h>\n#include <stdlib.h>\nint main(void){void*p=malloc(10);struct hpmalloc_stats s;hpmalloc_stats(&s,sizeof s);printf("%%s %%zu\\n",hpmalloc_version(),s.bytes_in_use);free(p);return s.bytes_in_use==0;}\n' > $$d/app.c && \
	$(CC) -o $$d/app $$d/app.c $$flags -Wl,-rpath,$$d/opt/hpm/lib && out=$$($$d/app) && \
	echo "PASS install: DESTDIR layout, pkg-config, a program built with it runs on hpmalloc ($$out)"

CHECK_TARGETS += check-install
