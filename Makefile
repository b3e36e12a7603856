# jsoncontract: build, test, bench, install.
# Variables follow LuaRocks' names; override on the command line:
#   make                      Lua 5.4 build into build/lua5.4/
#   make LUA=luajit           OpenResty LuaJIT 2.1 build into build/luajit/
#   make test                 specs on Lua 5.4, LuaJIT, under ASan+UBSan, and the core's on Lua 5.1
# The version is the rockspec's (rockspecs/jsoncontract-<version>-<rev>.rockspec).
VERSION     := $(shell ls rockspecs | sed -n 's/^jsoncontract-\(.*\)-[0-9]*\.rockspec$$/\1/p' | tail -1)
LUA         ?= lua5.4
PREFIX      ?= /usr/local
DESTDIR     ?=
CC          ?= cc
PKG_CONFIG  ?= pkg-config

ifeq ($(LUA),luajit)
LUA_PC      ?= luajit
LUA_ABI     ?= 5.1
else
LUA_PC      ?= $(LUA)
LUA_ABI     ?= $(patsubst lua%,%,$(LUA))
endif
LUA_INCDIR  ?= $(patsubst -I%,%,$(firstword $(shell $(PKG_CONFIG) --cflags-only-I $(LUA_PC) 2>/dev/null)))
LUADIR      ?= $(PREFIX)/share/lua/$(LUA_ABI)
LIBDIR      ?= $(PREFIX)/lib/lua/$(LUA_ABI)
BINDIR      ?= $(PREFIX)/bin

DEP_CFLAGS  := $(shell $(PKG_CONFIG) --cflags libcurl libpcre2-8 libcrypto 2>/dev/null)
DEP_LIBS    := $(shell $(PKG_CONFIG) --libs libcurl libpcre2-8 libcrypto 2>/dev/null || echo -lcurl -lpcre2-8 -lcrypto)

CWARNS      := -Wall -Wextra -pedantic -Wshadow -Wpointer-arith -Wcast-qual \
               -Wstrict-prototypes -Wmissing-prototypes -Wdeclaration-after-statement \
               -Wc++-compat -Wundef -Wwrite-strings
CFLAGS      ?= -O2 -g
LIBFLAG     ?= -shared
ALL_CFLAGS  := -std=c99 -D_POSIX_C_SOURCE=200809L $(CWARNS) $(CFLAGS) -fPIC -fvisibility=hidden \
               -I$(LUA_INCDIR) $(DEP_CFLAGS) -DJC_VERSION='"$(VERSION)"'

BUILD       ?= build/$(LUA)
SRCS        := csrc/core.c csrc/error.c csrc/utf8.c csrc/opts.c csrc/tape.c csrc/parse.c csrc/encode.c csrc/schema_compile.c csrc/schema_ref.c csrc/schema_eval.c csrc/schema_report.c csrc/schema_lua.c csrc/schema_format.c csrc/pattern.c csrc/transport.c csrc/stream.c csrc/metaschemas.c csrc/ffi.c
HDRS        := csrc/jc.h csrc/compat.h $(wildcard csrc/*.h)
OBJS        := $(patsubst csrc/%.c,$(BUILD)/%.o,$(SRCS))
TARGET      := $(BUILD)/jsoncontract/core.so

.PHONY: all test check asan bench fuzz install clean triage deps luajit

all: $(TARGET)

$(BUILD)/%.o: csrc/%.c $(HDRS)
	@mkdir -p $(BUILD)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(TARGET): $(OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LIBFLAG) $(CFLAGS) -o $@ $(OBJS) $(DEP_LIBS)

luajit:
	$(MAKE) LUA=luajit

# The C core under AddressSanitizer + UndefinedBehaviorSanitizer (Lua 5.4 host).
asan:
	$(MAKE) BUILD=build/asan CFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	        LIBFLAG="-shared -fsanitize=address,undefined"
	$(CC) -shared -fPIC -o build/asan/keep_modules.so tools/asan_keep_modules.c

# Install the Debian packages this project needs (idempotent).
deps:
	sh tools/install-deps.sh

test:
	sh tools/test.sh

# Lint alone (make test runs it too).
check:
	luacheck lua examples spec bench fuzz tools bin/jsoncontract bin/jsoncontract-standin

# Speed against peers, side by side in one run (ratios printed); never timed in tests.
# The C core's own benches (decode, tape, validation) run on LuaJIT too when it is here:
# OpenResty runs the module there, and its numbers differ.
BENCH_JIT := decode_bench tape_bench validate_bench
bench:
	$(MAKE) all
	@for f in bench/*_bench.lua; do echo "== $$f"; $(LUA) $$f || exit 1; done
	@if [ "$(LUA)" != luajit ] && command -v luajit >/dev/null 2>&1; then \
	  $(MAKE) LUA=luajit all >/dev/null && \
	  for b in $(BENCH_JIT); do echo "== bench/$$b.lua (LuaJIT)"; luajit bench/$$b.lua || exit 1; done; \
	fi

# libFuzzer targets under ASan+UBSan; FUZZ_SECONDS per target (default 60).
fuzz:
	sh fuzz/run.sh

# The review desk's item page, as docs/jobs.md shows it (needs nginx + Lua module, chromium,
# chromium-driver, python3-selenium).
docs/review-desk.png: lua/jsoncontract/review/*.lua lua/jsoncontract/jobs/review_queries.lua \
                      tools/review_browser.py tools/review_shot.sh spec/support/review_job.lua
	$(MAKE) -s all && $(MAKE) -s LUA=luajit
	@mkdir -p docs
	LUA=$(LUA) sh tools/review_shot.sh $@

triage:
	sh tools/install-deps.sh
	$(MAKE) all
	$(LUA) bin/jsoncontract triage

install: $(TARGET)
	install -d $(DESTDIR)$(LIBDIR)/jsoncontract $(DESTDIR)$(LUADIR) $(DESTDIR)$(BINDIR) \
	           $(DESTDIR)$(PREFIX)/share/jsoncontract/examples
	install -m 644 $(TARGET) $(DESTDIR)$(LIBDIR)/jsoncontract/core.so
	cp -R lua/jsoncontract $(DESTDIR)$(LUADIR)/
	install -m 644 examples/* $(DESTDIR)$(PREFIX)/share/jsoncontract/examples/
	install -m 755 bin/jsoncontract bin/jsoncontract-standin $(DESTDIR)$(BINDIR)/

clean:
	rm -rf build
