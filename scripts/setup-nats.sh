#!/usr/bin/env bash
# Builds nats-server v2.15.2 (JetStream included) from the Go tools module in tools/nats into
# the machine-level cache, then links it into .bin/ (the replication tests and the
# docker-compose-free local runs start it).
#
#   ${CACHEROUTE_CACHE_DIR:-$HOME/.cache/cacheroute}/nats-2.15.2/nats-server
#   .bin/nats-server -> cache
#
# A fresh clone on the same machine reuses the cached binary (a link, well under a second).
# With an empty cache it builds from the Go module proxy (about a minute of CPU). Under
# CI=true a failed build fails setup; otherwise it warns and the replication tests skip.
# CACHEROUTE_SKIP_NATS=1 skips the build.
set -euo pipefail
cd "$(dirname "$0")/.."

NATS_VERSION=2.15.2
CACHE_ROOT="${CACHEROUTE_CACHE_DIR:-$HOME/.cache/cacheroute}"
CACHE="$CACHE_ROOT/nats-$NATS_VERSION"

say() { printf 'setup-nats: %s\n' "$*"; }
fail() {
  if [ "${CI:-}" = true ]; then
    echo "setup-nats: $* (CI needs nats-server for the replication tests)" >&2
    exit 1
  fi
  printf 'setup-nats: WARNING: %s; the replication tests will skip\n' "$*" >&2
  exit 0
}

link_bin() {
  mkdir -p .bin
  ln -sfn "$CACHE/nats-server" .bin/nats-server
}

present() { [ -x "$CACHE/nats-server" ] && link_bin && say "nats-server $NATS_VERSION present ($CACHE${1:-})"; }

present && exit 0
[ "${CACHEROUTE_SKIP_NATS:-0}" != 1 ] || fail "CACHEROUTE_SKIP_NATS=1: not building nats-server"
command -v go >/dev/null 2>&1 || fail "Go not found: cannot build nats-server"
mkdir -p "$CACHE"
# One build at a time per machine; a concurrent setup waits, then finds the binary.
exec 9>"$CACHE/.build.lock"
! command -v flock >/dev/null 2>&1 || flock 9
present ", built by a concurrent setup" && exit 0

start=$(date +%s)
tmp="$CACHE/.nats-server.tmp.$$"
say "building nats-server $NATS_VERSION into $CACHE (first time on this machine)"
if (cd tools/nats && go build -trimpath -ldflags "-s -w" -o "$tmp" github.com/nats-io/nats-server/v2); then
  mv -f "$tmp" "$CACHE/nats-server"
else
  rm -f "$tmp"
  fail "nats-server build failed"
fi
# Whole output first: `| grep -q` under pipefail can fail when the writer gets SIGPIPE.
nats_reported=$("$CACHE/nats-server" --version 2>/dev/null || true)
[[ "$nats_reported" == *"v$NATS_VERSION"* ]] || fail "nats-server --version is not v$NATS_VERSION"
link_bin
say "built nats-server $NATS_VERSION in $(( $(date +%s) - start )) s"
