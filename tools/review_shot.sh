#!/bin/sh
# make docs/review-desk.png: a screenshot of the review desk's item page, taken by headless
# Chromium (tools/review_browser.py) from a desk that `bin/jsoncontract review` serves through
# nginx over the specs' small job (spec/support/review_job.lua), after pressing "a" on the
# model's answer so the contract's refusal shows beside the field.
# usage: sh tools/review_shot.sh OUT.png   (LUA=lua5.4 by default)
set -eu
out=$1
lua=${LUA:-lua5.4}
python=${JC_PYTHON:-/usr/bin/python3}
dir=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
JC_REVIEW_DIR=$dir "$lua" -e 'package.path = "lua/?.lua;lua/?/init.lua;spec/?.lua;" .. package.path
  package.cpath = "build/'"$lua"'/?.so;" .. package.cpath
  require("support.review_job").build(os.getenv("JC_REVIEW_DIR"), ".")'
port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$lua" bin/jsoncontract review "$dir" --listen "127.0.0.1:$port" >"$dir/desk.log" 2>&1 &
pid=$!
i=0
until grep -q "files in" "$dir/desk.log" 2>/dev/null; do
  i=$((i + 1))
  if [ $i -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then cat "$dir/desk.log" >&2; exit 1; fi
  sleep 0.05
done
"$python" tools/review_browser.py shot "http://127.0.0.1:$port" m1 "$out"
echo "wrote $out"
