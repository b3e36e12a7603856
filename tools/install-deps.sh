#!/bin/sh
# Install the Debian packages jsoncontract needs to build, test and run its
# demos, when any is missing. Idempotent; needs root (or sudo) for apt-get.
set -eu
PKGS="make gcc pkg-config lua5.4 liblua5.4-dev luajit2 libluajit2-5.1-dev \
libcjson-dev libcurl4-openssl-dev libssl-dev libpcre2-dev lua-busted lua-socket \
lua-sql-sqlite3 lua-dbi-sqlite3 lua-dbi-postgresql postgresql lua-cjson lua-check lua-argparse lua-filesystem lua-term luarocks lua5.3 liblua5.3-dev \
lua5.1 liblua5.1-0-dev sqlite3 nginx libnginx-mod-http-lua ca-certificates wrk curl openssl \
chromium chromium-driver python3-selenium strace valgrind"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing" >&2
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >&2
