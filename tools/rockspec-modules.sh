#!/bin/sh
# Print the rockspec's Lua module map for every file under lua/ (paste into build.modules).
cd "$(dirname "$0")/.." && find lua -name '*.lua' | LC_ALL=C sort | while read -r f; do
  m=$(printf '%s' "${f#lua/}" | sed 's/\.lua$//; s#/init$##; s#/#.#g')
  printf '      ["%s"] = "%s",\n' "$m" "$f"
done
