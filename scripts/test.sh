#!/usr/bin/env bash
# The test command: vet and race-enabled tests in every Go module of the
# repository (the engine's, and bench's own once it exists), then a short
# run of every fuzz target over its committed corpus plus a few seconds of
# new inputs.
set -euo pipefail
cd "$(dirname "$0")/.."

for mod in $(find . -name go.mod -not -path './.git/*' -exec dirname {} \; | sort); do
  echo "== module $mod"
  (cd "$mod" && go vet ./... && go test -race -count=1 -timeout 20m ./...)
done

fuzztime="${EBB_FUZZTIME:-5s}"
if [ "$fuzztime" != "0" ]; then
  echo "== fuzz ($fuzztime each)"
  grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
    pkg="./$(dirname "${f#./}")"
    for name in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //'); do
      echo "-- $pkg $name"
      go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" -fuzzminimizetime=2s "$pkg"
    done
  done
fi
