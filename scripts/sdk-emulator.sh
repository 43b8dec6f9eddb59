#!/usr/bin/env bash
# Runs the official Go SDK's own emulator tests (azcosmos v1.5.0,
# emulator_*_test.go, EMULATOR=1) against `ebb serve`, the way they run
# against the Cosmos DB emulator, and prints a PASS/FAIL line per test.
#
# Usage: scripts/sdk-emulator.sh [RUN_REGEXP]
#
#   RUN_REGEXP   go test -run pattern; default: every Test* function in the
#                SDK's emulator_*_test.go files.
#
# Environment:
#   EBB_BIN          the ebb binary to serve with (default: go build of
#                    ./cmd/ebb into a temporary directory)
#   EBB_SERVE_FLAGS  extra flags for `ebb serve` (word-split)
#   EBB_SDK_KEEP=1   keep the temporary directory (logs, data, SDK copy)
#   EBB_SDK_TIMEOUT  go test -timeout for the SDK suite (default 10m)
#
# The SDK's tests hard-code https://localhost:8081/ (and a few
# https://localhost:8903/, the compute gateway, which ebb does not serve), so
# the server must listen on port 8081: an exclusive flock on
# /tmp/ebb-port-8081.lock keeps concurrent runs from colliding.
#
# Output: the SDK's verbose test log in $tmp/sdk-test.log, then one summary
# line per selected test, "PASS Name", "FAIL Name", "SKIP Name" or
# "NORESULT Name" (the test binary died before reporting it), and the
# failure output of every failed test. Exit status 0 when no test failed.
set -euo pipefail
if [ -n "${EBB_BIN:-}" ] && [ "${EBB_BIN#/}" = "$EBB_BIN" ]; then
  EBB_BIN="$(pwd)/$EBB_BIN"
fi
cd "$(dirname "$0")/.."

azmod=github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos
azver=v1.5.0
port=8081
lockfile=/tmp/ebb-port-${port}.lock

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ebb-sdk-emulator.XXXXXX")
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -INT "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ "${EBB_SDK_KEEP:-}" = "1" ]; then
    echo "sdk-emulator: kept $tmp" >&2
  else
    chmod -R u+w "$tmp" 2>/dev/null || true
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT

# 1. The ebb binary.
if [ -z "${EBB_BIN:-}" ]; then
  echo "sdk-emulator: building ./cmd/ebb" >&2
  EBB_BIN="$tmp/ebb"
  go build -o "$EBB_BIN" ./cmd/ebb
fi
if [ ! -x "$EBB_BIN" ]; then
  echo "sdk-emulator: EBB_BIN=$EBB_BIN is not an executable file" >&2
  exit 2
fi

# 2. The SDK's source, copied somewhere writable (the module cache is
#    read-only); its go.sum pins its dependencies.
echo "sdk-emulator: fetching $azmod@$azver" >&2
srcdir=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "$azmod@$azver" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [ -z "$srcdir" ] || [ ! -d "$srcdir" ]; then
  echo "sdk-emulator: go mod download gave no source directory for $azmod@$azver" >&2
  exit 2
fi
sdk="$tmp/azcosmos"
cp -r "$srcdir" "$sdk"
chmod -R u+w "$sdk"

tests=$(grep -ho '^func Test[A-Za-z0-9_]*' "$sdk"/emulator_*_test.go | sed 's/^func //' | sort -u)
if [ $# -ge 1 ] && [ -n "$1" ]; then
  run="$1"
else
  run="^($(echo "$tests" | paste -sd '|' -))\$"
fi

# Compile the suite before taking the port, so the lock is held only while
# the server runs.
echo "sdk-emulator: compiling the SDK's tests" >&2
(cd "$sdk" && go test -c -o "$tmp/azcosmos.test" . >"$tmp/compile.log" 2>&1) || {
  cat "$tmp/compile.log" >&2
  echo "sdk-emulator: the SDK's tests did not compile" >&2
  exit 2
}

# 3. The port, then the server on a fresh directory.
exec 9>"$lockfile"
if ! flock -x -w 900 9; then
  echo "sdk-emulator: could not lock $lockfile within 15 minutes" >&2
  exit 2
fi
mkdir -p "$tmp/data"
# shellcheck disable=SC2086
"$EBB_BIN" serve --addr "127.0.0.1:$port" --dir "$tmp/data" ${EBB_SERVE_FLAGS:-} \
  >"$tmp/serve.log" 2>&1 &
server_pid=$!

ready=""
for _ in $(seq 200); do # up to 20 s
  if grep -q "https://" "$tmp/serve.log" 2>/dev/null; then
    ready=1
    break
  fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    break
  fi
  sleep 0.1
done
if [ -z "$ready" ]; then
  echo "sdk-emulator: ebb serve did not print its endpoint; its output:" >&2
  cat "$tmp/serve.log" >&2
  exit 2
fi
echo "sdk-emulator: server up: $(grep -m1 'https://' "$tmp/serve.log")" >&2

# The SDK's AAD tests build clients with the default TLS transport, which
# verifies the certificate: trust the server's own (served, like the
# emulator's, at /_explorer/emulator.pem) through SSL_CERT_FILE, which the
# suite's process alone sees. The other tests skip verification anyway.
certenv=()
pemurl="https://127.0.0.1:$port/_explorer/emulator.pem"
if command -v curl >/dev/null 2>&1; then
  curl -sfk "$pemurl" -o "$tmp/ebb.pem" 2>/dev/null || true
elif command -v node >/dev/null 2>&1; then
  node -e 'require("https").get(process.argv[1], {rejectUnauthorized: false}, (r) => r.pipe(process.stdout))' \
    "$pemurl" >"$tmp/ebb.pem" 2>/dev/null || true
fi
if grep -q 'BEGIN CERTIFICATE' "$tmp/ebb.pem" 2>/dev/null; then
  certenv=("SSL_CERT_FILE=$tmp/ebb.pem")
else
  echo "sdk-emulator: could not fetch $pemurl (needs curl or node); the AAD tests will fail TLS verification" >&2
fi

# 4. The SDK's suite, as its CI runs it against the emulator (no -race: it is
#    the SDK's suite, not ours).
echo "sdk-emulator: go test -run '$run'" >&2
set +e
(cd "$sdk" && env ${certenv[@]+"${certenv[@]}"} EMULATOR=1 "$tmp/azcosmos.test" -test.count=1 -test.v \
  -test.timeout "${EBB_SDK_TIMEOUT:-10m}" -test.run "$run" >"$tmp/sdk-test.log" 2>&1)
status=$?
set -e

# 5. The summary: one line per selected test that reported, then the tests
#    that should have run but did not report.
echo "== azcosmos $azver emulator tests against ebb serve"
grep -E '^--- (PASS|FAIL|SKIP): ' "$tmp/sdk-test.log" |
  sed -E 's/^--- (PASS|FAIL|SKIP): ([^ ]+).*/\1 \2/' >"$tmp/summary"
cat "$tmp/summary"
for t in $tests; do
  if echo "$t" | grep -qE "$run" && ! grep -q " $t\$" "$tmp/summary"; then
    echo "NORESULT $t"
  fi
done
if grep -q '^FAIL ' "$tmp/summary" || [ $status -ne 0 ]; then
  echo "== failure output"
  # With -v a test's log streams between its "=== RUN" and its "--- FAIL".
  for t in $(sed -n 's/^FAIL //p' "$tmp/summary"); do
    awk -v t="$t" '$0 == "=== RUN   " t {p=1} p {print} index($0, "--- FAIL: " t " ") == 1 {p=0}' \
      "$tmp/sdk-test.log" | head -80
  done
  if grep -q '^panic:' "$tmp/sdk-test.log"; then
    sed -n '/^panic:/,$p' "$tmp/sdk-test.log" | head -60
  fi
  echo "== server log (tail)"
  tail -40 "$tmp/serve.log"
fi
echo "== $(grep -c '^PASS ' "$tmp/summary" || true) passed, $(grep -c '^FAIL ' "$tmp/summary" || true) failed, $(grep -c '^SKIP ' "$tmp/summary" || true) skipped"
exit $status
