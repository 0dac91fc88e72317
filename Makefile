# mod_pdftoken - build, install and test.  See README.md.

APXS ?= apxs
CC ?= cc
CLANG ?= clang
PYTHON ?= /usr/bin/python3
PORT ?= 8080
FUZZ_SECONDS ?= 60
DESTDIR ?=

BUILD := build
WARN := -Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes \
        -Wpointer-arith -Wformat-security
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all \
       -fno-omit-frame-pointer
CHECK_LIBS = $$(pkg-config --cflags --libs check)
FUZZERS := verify query cookie
MODULE := .libs/mod_pdftoken.so

.PHONY: all install deps unit unit-asan fuzz fuzz-smoke bench-token \
        integration test demo format lint clean

all: $(MODULE)

# apxs compiles token.c into the module; the version script exports
# pdftoken_module alone, so the library's symbols cannot clash with
# another module's.
$(MODULE): mod_pdftoken.c token.c token.h
	@mkdir -p $(BUILD)
	@printf '{ global: pdftoken_module; local: *; };\n' > $(BUILD)/exports.map
	$(APXS) -c $(addprefix -Wc$(comma),$(WARN)) \
	    -Wl,-Wl$(comma)--version-script=$(BUILD)/exports.map \
	    -o mod_pdftoken.so mod_pdftoken.c token.c -lcrypto

comma := ,

# Never `apxs -a`: Debian enables modules with a2enmod, and a package must
# not edit httpd.conf.
install: $(MODULE)
	mkdir -p $(DESTDIR)$$($(APXS) -q LIBEXECDIR)
	$(APXS) -i -S LIBEXECDIR=$(DESTDIR)$$($(APXS) -q LIBEXECDIR) \
	    -n pdftoken mod_pdftoken.la

deps:
	@sh t/deps.sh build unit fuzz integration

$(BUILD)/test_token: token.c token.h t/unit/test_token.c
	@mkdir -p $(BUILD)
	$(CC) -g -O1 $(WARN) -I. token.c t/unit/test_token.c -o $@ \
	    $(CHECK_LIBS) -lcrypto

$(BUILD)/test_token_asan: token.c token.h t/unit/test_token.c
	@mkdir -p $(BUILD)
	$(CLANG) -g -O1 $(WARN) $(SAN) -I. token.c t/unit/test_token.c \
	    -o $@ $(CHECK_LIBS) -lcrypto

unit: deps $(BUILD)/test_token
	PDFTOKEN_SRCDIR=. PYTHON=$(PYTHON) $(BUILD)/test_token

unit-asan: deps $(BUILD)/test_token_asan
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
	$(MAKE) fuzz FUZZ_SECONDS=20

$(BUILD)/bench_token: token.c token.h t/bench/bench_token.c
	@mkdir -p $(BUILD)
	$(CC) -O2 $(WARN) -I. token.c t/bench/bench_token.c -o $@ -lcrypto

bench-token: $(BUILD)/bench_token
	$(BUILD)/bench_token

# The whole integration suite, once per MPM.
integration: deps $(MODULE)
	PDFTOKEN_MPM=event $(PYTHON) -m pytest -q -p no:cacheprovider t/integration
	PDFTOKEN_MPM=prefork $(PYTHON) -m pytest -q -p no:cacheprovider t/integration

test: deps unit integration

demo: deps $(MODULE)
	$(PYTHON) t/demo/demo.py --port $(PORT)

format:
	clang-format -i token.c token.h mod_pdftoken.c t/*/*.c

lint:
	clang-format --dry-run --Werror token.c token.h mod_pdftoken.c
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
	    --inline-suppr --suppress=varFuncNullUB \
	    -I. token.c mod_pdftoken.c t/unit/test_token.c

clean:
	rm -rf $(BUILD) .libs *.o *.lo *.slo *.la
