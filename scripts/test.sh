#!/usr/bin/env bash
# The test command: vet and race-enabled tests in every Go module of the
# repository (the engine's, bench's, and cmd/ebb/sdktest's, which drives
# `ebb serve` with the official Go SDK, runs that SDK's emulator suite on
# port 8081 through scripts/sdk-emulator.sh, and runs the JavaScript SDK's
# smoke script after `npm ci`, so it needs Node.js 20+ and npm), then the
# engine's allocation-count tests without the race detector, then a short
# run of every fuzz target over its committed corpus plus 30000 executions of
# new inputs.
set -euo pipefail
cd "$(dirname "$0")/.."

for mod in $(find . -name go.mod -not -path './.git/*' -exec dirname {} \; | sort); do
  echo "== module $mod"
  (cd "$mod" && go vet ./... && go test -race -count=1 -timeout 20m ./...)
done

# Allocation counts, which the race detector's sync.Pool makes random.
echo "== allocation counts, without the race detector"
go test -count=1 -run 'Allocs' ./engine/...

# Budgets are counts of executions, not durations: Go 1.26's fuzzing
# coordinator can fail a target with a bare "context deadline exceeded" when
# a duration runs out mid-execution on a busy machine (go.dev/issue/75804,
# fixed in Go 1.27); a count has no deadline to race.
fuzztime="${EBB_FUZZTIME:-30000x}"
if [ "$fuzztime" != "0" ]; then
  echo "== fuzz ($fuzztime each)"
  grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
    pkg="./$(dirname "${f#./}")"
    for name in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //'); do
      echo "-- $pkg $name"
      go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" -fuzzminimizetime=200x "$pkg"
    done
  done
fi
