#!/bin/sh
# make fuzz: build the libFuzzer targets of jsoncontract.core (decode;
# decode->encode->decode; stream_new feed/preview/finish vs decode;
# validator:check(text) vs validator:validate(decode(text)), and the FFI
# entry points jc_ffi_check/jc_ffi_validate_tape vs the C API) under
# ASan+UBSan (clang, Lua 5.4 from Debian) and run each for FUZZ_SECONDS
# (default 60), seeded from JSONTestSuite's test_parsing when present.
# Exits non-zero when a target finds a crash, leak, sanitizer report or
# broken invariant (the input is saved as build/fuzz/<target>-crash-*).
#   FUZZ_SECONDS=600 sh fuzz/run.sh            every target, 10 min each
#   FUZZ_TARGETS="decode" sh fuzz/run.sh       one target
#   FUZZ_JOBS=2 ...                            libFuzzer -fork workers
# Not needed by 'make test'; needs clang with the libFuzzer runtime.
set -eu
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_TARGETS:-"decode roundtrip stream differential"}
OUT=${FUZZ_BUILD:-build/fuzz}
CLANG=${CLANG:-clang}
SHARED=${JC_SHARED:-../shared}
SEEDS="$SHARED/corpora/JSONTestSuite/test_parsing"

if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);
int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' \
    | $CLANG -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  echo "fuzz: $CLANG cannot build libFuzzer targets (install clang and its runtime)" >&2
  exit 2
fi

mkdir -p "$OUT"
DEP_CFLAGS=$(pkg-config --cflags lua5.4 libcurl libpcre2-8 libcrypto)
DEP_LIBS=$(pkg-config --libs lua5.4 libcurl libpcre2-8 libcrypto 2>/dev/null || echo -llua5.4 -lcurl -lpcre2-8 -lcrypto)
VERSION=$(ls rockspecs | sed -n 's/^jsoncontract-\([0-9][^-]*\)-[0-9]*\.rockspec$/\1/p' | tail -1)
# The module's sources as the Makefile lists them.
SRCS=$(sed -n 's/^SRCS *:= *//p' Makefile)
FLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"

status=0
for t in $TARGETS; do
  echo "== fuzz_$t: building" >&2
  # shellcheck disable=SC2086
  $CLANG -std=c99 -D_POSIX_C_SOURCE=200809L -DJC_VERSION="\"$VERSION\"" $FLAGS \
    $DEP_CFLAGS -Icsrc fuzz/fuzz_$t.c $SRCS $DEP_LIBS -lm -o "$OUT/fuzz_$t"
  corpus="$OUT/corpus-$t"
  mkdir -p "$corpus"
  seeds=""
  if [ -d "$SEEDS" ]; then seeds=$SEEDS; else echo "fuzz: no seeds at $SEEDS" >&2; fi
  max_len=8192
  [ "$t" = stream ] && max_len=2048   # each preview re-reads the text so far
  echo "== fuzz_$t: running ${SECONDS_EACH}s" >&2
  # shellcheck disable=SC2086
  if ASAN_OPTIONS="detect_leaks=1:abort_on_error=0" UBSAN_OPTIONS="print_stacktrace=1" \
     "$OUT/fuzz_$t" -max_total_time="$SECONDS_EACH" -dict=fuzz/json.dict \
       -max_len=$max_len -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$OUT/$t-" ${FUZZ_JOBS:+-fork=$FUZZ_JOBS} \
       "$corpus" $seeds >"$OUT/$t.log" 2>&1; then
    echo "fuzz_$t: no finding in ${SECONDS_EACH}s ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$OUT/$t.log" | tail -1))"
  else
    echo "fuzz_$t: FINDING (see $OUT/$t.log and $OUT/$t-*)"
    tail -40 "$OUT/$t.log"
    status=1
  fi
done
exit $status
