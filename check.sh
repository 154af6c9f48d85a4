#!/usr/bin/env bash
# check.sh is the project's test command, the one CI runs: formatting, go vet,
# staticcheck, the tests under the race detector, the exhaustive explorer of
# the state protocol, the spin model (if spin is installed), a short fuzz
# run, and every benchmark once so that none of them can rot. It fetches the
# Go tools it needs itself, at pinned versions.
#
# ./check.sh -long adds the slow checks: the herd of 100,000 jobs on three
# replica processes, on SQLite and PostgreSQL, at the default lease.
set -euo pipefail
cd "$(dirname "$0")"

long=false
case "${1:-}" in
-long) long=true ;;
"") ;;
*)
	echo "usage: ./check.sh [-long]" >&2
	exit 2
	;;
esac

staticcheck=honnef.co/go/tools/cmd/staticcheck@v0.8.2

step() { printf '\n== %s\n' "$*"; }

# Every module of the repository: the library first, then each folder with a
# go.mod of its own (cron/, the SQL store, bench/, example modules).
modules=(.)
while IFS= read -r mod; do
	modules+=("$(dirname "$mod")")
done < <(find . -mindepth 2 -name go.mod -not -path './.git/*' | sort)

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
		step "$m: go vet, and on a 32-bit target"
		go vet ./...
		GOARCH=386 go vet ./... # builds there: wheel's timer size is checked at compile time
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

step "explore every interleaving of the state protocol (default budget)"
go test -count=1 -run '^TestExplore' .

if command -v spin >/dev/null && command -v gcc >/dev/null; then
	step "spin: the Promela model of the state protocol"
	spin/run.sh
else
	step "spin: skipped, not installed (apt-get install -y spin gcc)"
fi

# A count, not a duration: with -fuzztime 5s, Go before 1.27 can report
# "context deadline exceeded" as a failure when the time runs out while a
# worker is mid-call (go.dev/issue/75804). A count never races a deadline.
step "fuzz the state transitions: 60000 inputs"
go test -run '^$' -fuzz '^FuzzTransitions$' -fuzztime 60000x .

if $long; then
	step "long: a herd of 100,000 jobs on three replicas, every slot once"
	(cd schedule/sqlstore && SQLSTORE_HERD_JOBS=100000 go test -count=1 -timeout 30m -run '^TestHerdExactlyOnce$' .)
fi

printf '\nall checks passed\n'
