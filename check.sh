#!/usr/bin/env bash
# check.sh is the project's test command, the one CI runs: formatting, go vet,
# staticcheck, the tests under the race detector, a short fuzz run, and every
# benchmark once so that none of them can rot. It installs what it needs
# itself, at pinned versions.
set -euo pipefail
cd "$(dirname "$0")"

staticcheck=honnef.co/go/tools/cmd/staticcheck@v0.8.2

step() { printf '\n== %s\n' "$*"; }

# Every module of the repository: the library, and the comparison benchmarks
# if present.
modules=(.)
[ -f bench/go.mod ] && modules+=(bench)

step gofmt
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "not gofmt-ed:"
	echo "$unformatted"
	exit 1
fi

for m in "${modules[@]}"; do
	(
		cd "$m"
		step "$m: go mod tidy"
		go mod tidy -diff
		step "$m: go vet"
		go vet ./...
		step "$m: staticcheck"
		go run "$staticcheck" ./...
		step "$m: go test -race"
		go test -race -count=1 ./...
		step "$m: benchmarks, once each"
		go test -run '^$' -bench . -benchtime 1x ./...
	)
done

if [ -f bench/go.mod ]; then
	step "bench: the comparison with other timer libraries, smoke run"
	(cd bench && go run ./cmd/compare -smoke)
fi

step "fuzz the state transitions for a few seconds"
go test -run '^$' -fuzz '^FuzzTransitions$' -fuzztime 5s .

printf '\nall checks passed\n'
