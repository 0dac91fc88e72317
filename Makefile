# mod_pdftoken - build, install and test.  See README.md.

APXS ?= apxs
CC ?= cc
CLANG ?= clang
PYTHON ?= /usr/bin/python3
PORT ?= 8080
FUZZ_SECONDS ?= 60
DESTDIR ?=
# Extra -D flags for the module, e.g. DEFS=-DPDFTOKEN_EVP_MAC (README).
DEFS ?=

BUILD := build
WARN := -Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes \
        -Wpointer-arith -Wformat-security
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all \
       -fno-omit-frame-pointer
CHECK_LIBS = $$(pkg-config --cflags --libs check)
FUZZERS := verify query cookie render
MODULE := .libs/mod_pdftoken.so

.PHONY: all install deps unit-deps unit-asan-deps unit unit-asan fuzz \
        fuzz-smoke bench-token \
        integration test demo format lint clean

all: $(MODULE)

# apxs compiles token.c into the module; the version script exports
# pdftoken_module alone, so the library's symbols cannot clash with
# another module's.
$(MODULE): mod_pdftoken.c token.c token.h
	@mkdir -p $(BUILD)
	@printf '{ global: pdftoken_module; local: *; };\n' > $(BUILD)/exports.map
	$(APXS) -c $(DEFS) $(addprefix -Wc$(comma),$(WARN)) \
	    -Wl,-Wl$(comma)--version-script=$(BUILD)/exports.map \
	    -o mod_pdftoken.so mod_pdftoken.c token.c -lcrypto

comma := ,

# Debian's a2enmod reads mods-available/<name>.load and .conf: `make install`
# puts them there when this directory exists (on Debian and Ubuntu), under
# DESTDIR like the module.  Set it empty to leave them out, or to another
# directory.
APACHE_MODS_AVAILABLE ?= $(if $(wildcard /etc/apache2/mods-available),/etc/apache2/mods-available)
# The secret, beside httpd's own configuration (apxs -q SYSCONFDIR):
# /etc/apache2/pdftoken.secret on Debian, the file the installed
# pdftoken.conf reads; /etc/httpd/conf/pdftoken.secret on RHEL and Fedora;
# /usr/local/apache2/conf/pdftoken.secret for an httpd built from source.
SECRET_FILE ?= $(shell $(APXS) -q SYSCONFDIR)/pdftoken.secret

# Never `apxs -a`, never a2enmod: Debian enables modules with a2enmod, run
# by the administrator, and an install must not edit httpd.conf.  The .load
# names the module where apxs installed it (without DESTDIR: the path the
# running server will see).  An existing pdftoken.conf is kept, since the
# administrator may have edited it (rotation).  Installing onto the live
# system (no DESTDIR) also makes the secret, on every system, as the
# package's postinst does; a staged install (DESTDIR) never holds one, or
# every copy made from it would share it.
install: $(MODULE)
	mkdir -p $(DESTDIR)$$($(APXS) -q LIBEXECDIR)
	$(APXS) -i -S LIBEXECDIR=$(DESTDIR)$$($(APXS) -q LIBEXECDIR) \
	    -n pdftoken mod_pdftoken.la
ifneq ($(APACHE_MODS_AVAILABLE),)
	mkdir -p $(DESTDIR)$(APACHE_MODS_AVAILABLE) $(BUILD)
	printf 'LoadModule pdftoken_module %s/mod_pdftoken.so\n' \
	    "$$($(APXS) -q LIBEXECDIR)" > $(BUILD)/pdftoken.load
	install -m 644 $(BUILD)/pdftoken.load \
	    $(DESTDIR)$(APACHE_MODS_AVAILABLE)/pdftoken.load
	@if [ -e $(DESTDIR)$(APACHE_MODS_AVAILABLE)/pdftoken.conf ]; then \
	    echo "kept $(DESTDIR)$(APACHE_MODS_AVAILABLE)/pdftoken.conf"; \
	else \
	    echo install -m 644 debian/pdftoken.conf \
	        $(DESTDIR)$(APACHE_MODS_AVAILABLE)/pdftoken.conf; \
	    install -m 644 debian/pdftoken.conf \
	        $(DESTDIR)$(APACHE_MODS_AVAILABLE)/pdftoken.conf; \
	fi
endif
ifeq ($(DESTDIR),)
	@$(MAKE) --no-print-directory install-secret
ifneq ($(APACHE_MODS_AVAILABLE),)
	@echo "Enable it with:  a2enmod pdftoken"
else
	@echo "Load it with these two lines in httpd's configuration:"
	@echo "  LoadModule pdftoken_module $$($(APXS) -q LIBEXECDIR)/mod_pdftoken.so"
	@echo "  PdfTokenSecretFile $(SECRET_FILE)"
endif
endif

# 32 random bytes as 64 hex digits, root:root 0600, linked into place only
# if no file (or link) is there: an existing secret is never replaced.
.PHONY: install-secret
install-secret:
	@if [ -e $(SECRET_FILE) ] || [ -L $(SECRET_FILE) ]; then \
	    echo "kept $(SECRET_FILE)"; \
	else \
	    hex=$$(od -An -vtx1 -N32 /dev/urandom | tr -d ' \n'); \
	    [ $${#hex} -eq 64 ] || { echo "cannot read /dev/urandom" >&2; \
	                              exit 1; }; \
	    tmp=$$(umask 077 && mktemp $(SECRET_FILE).XXXXXXXX) || exit 1; \
	    printf '%s\n' "$$hex" > $$tmp && chmod 600 $$tmp && \
	    ln $$tmp $(SECRET_FILE); rc=$$?; rm -f $$tmp; \
	    [ $$rc -eq 0 ] && echo "made $(SECRET_FILE)"; exit $$rc; \
	fi

# The Debian package, built by dpkg-buildpackage in a clean copy of the
# sources under $(BUILD)/deb (the work tree is never cleaned or written to);
# the .deb lands in $(BUILD).
DEB_SOURCES := Makefile mod_pdftoken.c token.c token.h LICENSE README.md CHANGES \
               conf docs debian

.PHONY: deb deploy-test
deb:
	@sh t/deps.sh build deb
	rm -rf $(BUILD)/deb $(BUILD)/libapache2-mod-pdftoken_*.deb
	mkdir -p $(BUILD)/deb/src
	cp -a $(DEB_SOURCES) $(BUILD)/deb/src/
	cd $(BUILD)/deb/src && dpkg-buildpackage -us -uc -b
	mv $(BUILD)/deb/libapache2-mod-pdftoken_*.deb $(BUILD)/
	@ls $(BUILD)/libapache2-mod-pdftoken_*.deb

# Installs that package into this machine's apache2 (dpkg -i twice,
# a2enmod, apache2ctl configtest, a graceful reload, a restart, a2dismod,
# dpkg --purge) with one site on 127.0.0.1, checks `make install` + a2enmod
# on the live system, and puts the machine back as it was: /etc/apache2,
# /var/lib/apache2 and the module directory end as they started, and a
# stock apache2 that runs is never touched.  Needs root, like CI.
deploy-test: deb
	@sh t/deps.sh integration deploy
	PDFTOKEN_DEB="$$(ls $(BUILD)/libapache2-mod-pdftoken_*.deb)" \
	    $(PYTHON) -m pytest -q -p no:cacheprovider t/deploy

deps:
	@sh t/deps.sh build unit fuzz integration

# What the unit suite needs, and no more: the library and its tests build
# against libcrypto and Check alone (no apache2, PHP or ModSecurity).
unit-deps:
	@sh t/deps.sh unit

UNIT_SOURCES := t/unit/test_token.c t/unit/test_render.c

$(BUILD)/test_token: token.c token.h $(UNIT_SOURCES)
	@mkdir -p $(BUILD)
	$(CC) -g -O1 $(WARN) -I. token.c $(UNIT_SOURCES) -o $@ \
	    $(CHECK_LIBS) -lcrypto

# The same suite on the EVP_MAC build of the HMAC (token.c, -DPDFTOKEN_EVP_MAC),
# the one a libcrypto without deprecated APIs, or a FIPS site, gets.
$(BUILD)/test_token_evp: token.c token.h $(UNIT_SOURCES)
	@mkdir -p $(BUILD)
	$(CC) -g -O1 $(WARN) -DPDFTOKEN_EVP_MAC -I. token.c $(UNIT_SOURCES) \
	    -o $@ $(CHECK_LIBS) -lcrypto

$(BUILD)/test_token_asan: token.c token.h $(UNIT_SOURCES)
	@mkdir -p $(BUILD)
	$(CLANG) -g -O1 $(WARN) $(SAN) -I. token.c $(UNIT_SOURCES) \
	    -o $@ $(CHECK_LIBS) -lcrypto

unit: unit-deps $(BUILD)/test_token $(BUILD)/test_token_evp
	PDFTOKEN_SRCDIR=. PYTHON=$(PYTHON) $(BUILD)/test_token
	PDFTOKEN_SRCDIR=. PYTHON=$(PYTHON) $(BUILD)/test_token_evp

# clang and its sanitizer runtimes are the fuzz group's packages.
unit-asan-deps:
	@sh t/deps.sh unit fuzz

unit-asan: unit-asan-deps $(BUILD)/test_token_asan
	PDFTOKEN_SRCDIR=. PYTHON=$(PYTHON) CK_FORK=no \
	    ASAN_OPTIONS=detect_leaks=1 $(BUILD)/test_token_asan

$(BUILD)/fuzz_%: t/fuzz/fuzz_%.c token.c token.h
	@mkdir -p $(BUILD)
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=all -I. token.c $< -o $@ -lcrypto

# Each target runs FUZZ_SECONDS on a scratch corpus seeded from t/fuzz.
fuzz: deps $(addprefix $(BUILD)/fuzz_,$(FUZZERS))
	@for t in $(FUZZERS); do \
	    mkdir -p $(BUILD)/corpus/$$t; \
	    echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	    $(BUILD)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
	        -print_final_stats=1 -artifact_prefix=$(BUILD)/ \
	        $(BUILD)/corpus/$$t t/fuzz/seeds/$$t || exit 1; \
	done

fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=10

$(BUILD)/bench_token: token.c token.h t/bench/bench_token.c
	@mkdir -p $(BUILD)
	$(CC) -O2 $(WARN) -I. token.c t/bench/bench_token.c -o $@ -lcrypto

bench-token: $(BUILD)/bench_token
	$(BUILD)/bench_token

.PHONY: bench bench-ir bench-smoke bench-deps

bench-deps:
	@sh t/deps.sh build integration bench

# wrk and callgrind against a real httpd on 127.0.0.1, one scope per
# scenario (t/bench/bench.py): about 6 minutes, then the table goes into
# BENCHMARKS.md.  Run it on a quiet machine.
bench: bench-deps $(MODULE) $(BUILD)/bench_token
	$(PYTHON) t/bench/bench.py --out BENCHMARKS.md

# The callgrind part of `bench` alone, 10 KB scenarios: Ir per request,
# the module's own share of inline and untouched, and inline - bare+token
# by function.  Exact counts whatever the machine's load; about 1 minute.
bench-ir: bench-deps $(MODULE)
	$(PYTHON) t/bench/bench.py --ir

# Every part of `bench` for a few seconds; fails only when one of them
# produced no numbers.  Under 2 minutes.
bench-smoke: bench-deps $(MODULE) $(BUILD)/bench_token
	$(PYTHON) t/bench/bench.py --smoke

# pytest-xdist: JOBS workers, each with its own servers, ports and
# directory; --dist loadfile keeps a test file on one worker, so that its
# module-scoped servers are made once.  The suites mostly wait on httpd,
# so on a 2-core machine 4 workers beat 2 (-n auto), idle and with two
# CPU hogs running (figures in the commit that set this).
JOBS ?= 4
PYTEST_PARALLEL = $(PYTHON) -m pytest -q -p no:cacheprovider -n $(JOBS) \
    --dist loadfile

# The whole integration suite, once per MPM.
integration: deps $(MODULE)
	PDFTOKEN_MPM=event $(PYTEST_PARALLEL) t/integration
	PDFTOKEN_MPM=prefork $(PYTEST_PARALLEL) t/integration

.PHONY: hostile asan-module test-asan test-valgrind soak

# The hostile requests (t/hostile: the corpus.txt entries, and the cases
# it cannot say), over raw sockets to a real httpd, once per MPM.
hostile: deps $(MODULE)
	PDFTOKEN_MPM=event $(PYTEST_PARALLEL) t/hostile
	PDFTOKEN_MPM=prefork $(PYTEST_PARALLEL) t/hostile

# The module under ASan and UBSan, for Debian's uninstrumented apache2.
# gcc, because its sanitizer runtimes are shared libraries: the module
# links them, and the harness preloads libasan into apache2 (the ASan
# runtime must come first).  Same sources and apxs flags as the real
# module, same exported symbol.
ASAN_CC ?= gcc
ASAN_MODULE := $(BUILD)/asan/mod_pdftoken.so
SAN_ENV = PDFTOKEN_MODULE=$(CURDIR)/$(ASAN_MODULE) \
    PDFTOKEN_HTTPD_PRELOAD=$$($(ASAN_CC) -print-file-name=libasan.so) \
    PDFTOKEN_SANITIZER_LOG_DIR=$(CURDIR)/$(BUILD)/sanitizer \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

$(ASAN_MODULE): mod_pdftoken.c token.c token.h
	@mkdir -p $(BUILD)/asan
	@printf '{ global: pdftoken_module; local: *; };\n' \
	    > $(BUILD)/asan/exports.map
	$(ASAN_CC) -shared -fPIC $$($(APXS) -q CFLAGS) \
	    $$($(APXS) -q EXTRA_CPPFLAGS) -I$$($(APXS) -q INCLUDEDIR) \
	    -I$$($(APXS) -q APR_INCLUDEDIR) $(WARN) -g -O1 $(SAN) \
	    -Wl,--version-script=$(BUILD)/asan/exports.map \
	    -o $@ mod_pdftoken.c token.c -lcrypto

asan-module: $(ASAN_MODULE)

# The whole integration suite and the hostile corpus with the ASan module
# loaded, once per MPM in ASAN_MPMS.  Any ASan or UBSan report fails the
# server's tests; copies land in $(BUILD)/sanitizer.  CI runs event only
# (threads, so the per-thread nonce pools too), to stay well under 30
# minutes; `make test` has already run both MPMs with the real module.
ASAN_MPMS ?= event prefork
test-asan: deps $(ASAN_MODULE)
	rm -rf $(BUILD)/sanitizer
	for mpm in $(ASAN_MPMS); do \
	    $(SAN_ENV) PDFTOKEN_MPM=$$mpm $(PYTEST_PARALLEL) \
	        t/integration t/hostile || exit 1; \
	done

# One httpd (-X) under valgrind --leak-check=full, a request mix (R1 to R5
# and the hostile corpus); fails on any invalid read or write and on any
# leak whose stack passes through the module.  Slow: not part of `test`.
test-valgrind: $(MODULE)
	@sh t/deps.sh integration bench
	$(PYTHON) t/hostile/valgrind_run.py --module $(CURDIR)/$(MODULE)

# 60 s of wrk with 256 connections of mixed traffic against event, then
# prefork, with a graceful restart every 15 s, and each again without
# restarts as the control (t/soak/soak.py).  About 5 minutes; not for CI.
soak: $(MODULE)
	@sh t/deps.sh integration bench
	$(PYTHON) t/soak/soak.py --control --module $(CURDIR)/$(MODULE)

# First views of PHP-FPM, CGI and proxied PDFs under wrk (30 s, a graceful
# restart every 5 s, both MPMs): fails on any error-level line, 5xx or
# handler cut off, prints RSS.  About 2.5 minutes; not for CI.
.PHONY: soak-first-views
soak-first-views: $(MODULE)
	@sh t/deps.sh integration bench
	$(PYTHON) t/soak/soak.py --first-views --control \
	    --module $(CURDIR)/$(MODULE)

.PHONY: browser browser-deps browser-record

browser-deps:
	@sh t/deps.sh build integration browser

# puppeteer-core and selenium-webdriver from the lock file; npm ci again when
# either file is newer than the install.  --ignore-scripts: nothing may
# download a browser or a driver.
BROWSER_NODE := t/browser/node_modules/.package-lock.json
$(BROWSER_NODE): t/browser/package.json t/browser/package-lock.json
	npm ci --prefix t/browser --ignore-scripts --no-audit --no-fund
	@touch $@

# Both attacks and every visitor's path in Debian's Chromium (CDP) and
# Firefox ESR (WebDriver BiDi), driven by puppeteer-core, and in WebKitGTK's
# MiniBrowser (WebKitWebDriver, W3C WebDriver, selenium-webdriver) under an
# Xvfb of its own: t/browser/run.py.  Over HTTP, and over HTTPS with h2 (a
# test CA made per run, trusted by Chromium and Firefox through NSS
# databases; WebKit is given the site's certificate for its host names),
# with planted cookies, the pile-up and the render matrix
# (t/browser/render-matrix.tsv): fails when an engine renders a cell
# differently from the recording.  BROWSER_SET=mission runs what `make
# test` runs (every case but the pile-up and the matrix, the three engines
# side by side), BROWSER_SET=rest the others; `.ci/run` runs `make test`,
# then the rest.  The whole set: about 14 minutes on an idle 2-core machine.
BROWSER_SET ?= all
browser: browser-deps $(MODULE) $(BROWSER_NODE)
	$(PYTHON) t/browser/run.py --set $(BROWSER_SET)

# Record what each engine renders anew (review the diff before committing).
browser-record: browser-deps $(MODULE) $(BROWSER_NODE)
	$(PYTHON) t/browser/run.py --record-matrix

# The README's test command.  Its browser part is the mission set: the
# pile-up and the render matrix are `make browser`'s.
test: deps unit integration hostile deploy-test
	@$(MAKE) --no-print-directory browser BROWSER_SET=mission

# Only what the demo needs: the build tools, apache2-bin (the server
# binary and its modules, no service, no /etc/apache2) and python3.
.PHONY: demo-deps
demo-deps:
	@sh t/deps.sh build demo

demo: demo-deps $(MODULE)
	$(PYTHON) t/demo/demo.py --port $(PORT)

format:
	clang-format -i token.c token.h mod_pdftoken.c t/*/*.c t/*/*/*.c

lint:
	@sh t/deps.sh lint
	clang-format --dry-run --Werror token.c token.h mod_pdftoken.c t/*/*.c t/*/*/*.c
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
	    --inline-suppr --suppress=varFuncNullUB \
	    -I. token.c mod_pdftoken.c $(UNIT_SOURCES)

clean:
	rm -rf $(BUILD) .libs *.o *.lo *.slo *.la
