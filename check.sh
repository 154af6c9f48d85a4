#!/usr/bin/env bash
# check.sh is the project's test command, the one CI runs: formatting, go vet,
# staticcheck, the tests under the race detector, the exhaustive explorer of
# the state protocol, the spin model (if spin is installed), a short fuzz
# run, and every benchmark once so that none of them can rot. It fetches the
# Go tools it needs itself, at pinned versions. Each step prints what it
# checks and how long it took; a step's own output is shown only if it
# fails (the tests' summary lines aside), and the last line sums it up.
#
# ./check.sh -long adds the slow checks: the herd of 100,000 jobs on three
# replica processes, on SQLite and PostgreSQL, at the default lease.
set -euo pipefail
cd "$(dirname "$0")"

long=false
case "${1:-}" in
-long) long=true ;;
-write-api) ;;
"") ;;
*)
	echo "usage: ./check.sh [-long | -write-api]" >&2
	exit 2
	;;
esac

staticcheck=honnef.co/go/tools/cmd/staticcheck@v0.8.2
apidiff=golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4

# The modules whose API is recorded in api/, as module path and folder.
api_modules=(
	"circulation github.com/circulation-go/circulation ."
	"cron github.com/circulation-go/circulation/cron cron"
	"sqlstore github.com/circulation-go/circulation/schedule/sqlstore schedule/sqlstore"
	"admin github.com/circulation-go/circulation/admin admin"
)

# ./check.sh -write-api records the API of each module as the baseline
# that later checks compare with: after an incompatible change, once
# CHANGELOG.md says so.
if [ "${1:-}" = -write-api ]; then
	for a in "${api_modules[@]}"; do
		read -r name path dir <<<"$a"
		(cd "$dir" && go run "$apidiff" -m -w "$OLDPWD/api/$name.export" "$path")
	done
	echo "api/ written"
	exit 0
fi

# step starts a step: it prints what the step checks, after the time the
# previous one took.
steps=0
started=$SECONDS
step_start=$SECONDS
step_name=""
step() {
	step_end
	step_name="$*"
	step_start=$SECONDS
	steps=$((steps + 1))
	printf '== %s\n' "$*"
}
step_end() {
	if [ -n "$step_name" ]; then
		printf '   %ds\n' $((SECONDS - step_start))
	fi
	step_name=""
}

# quiet runs a command and shows its output only if it fails: the output of
# a step that passed (one-iteration benchmark lines, a model checker's
# statistics) reads like results it does not give.
quiet() {
	local out
	out=$(mktemp)
	"$@" >"$out" 2>&1 && {
		rm -f "$out"
		return 0
	}
	local code=$?
	cat "$out"
	rm -f "$out"
	return $code
}

# Every module of the repository: the library first, then each folder with a
# go.mod of its own (cron/, the SQL store, bench/, example modules).
modules=(.)
while IFS= read -r mod; do
	modules+=("$(dirname "$mod")")
done < <(find . -mindepth 2 -name go.mod -not -path './.git/*' | sort)

step "gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "not gofmt-ed:"
	echo "$unformatted"
	exit 1
fi

for m in "${modules[@]}"; do
	step "$m: go mod tidy, go vet (and on a 32-bit target), staticcheck"
	(
		cd "$m"
		quiet go mod tidy -diff
		quiet go vet ./...
		quiet env GOARCH=386 go vet ./... # builds there: wheel's timer size is checked at compile time
		quiet go run "$staticcheck" ./...
	)
	step "$m: go test -race"
	# The tests' summary lines, one a package; a failure's whole output.
	(cd "$m" && go test -race -count=1 ./... | { grep -v '^?' || true; })
	step "$m: every benchmark once, so that none can rot (no figures: see docs)"
	(cd "$m" && quiet go test -short -run '^$' -bench . -benchtime 1x ./...)
done
step_end

step "API: incompatible changes against the baseline in api/"
for a in "${api_modules[@]}"; do
	read -r name path dir <<<"$a"
	now=$(mktemp)
	(cd "$dir" && quiet go run "$apidiff" -m -w "$now" "$path")
	changes=$(go run "$apidiff" -m -incompatible "api/$name.export" "$now" 2>/dev/null || true)
	rm -f "$now"
	if [ -n "$changes" ]; then
		echo "$name: incompatible with api/$name.export:"
		echo "$changes"
		echo "say so in CHANGELOG.md, then record the new API: ./check.sh -write-api"
		exit 1
	fi
done

if [ -f bench/go.mod ]; then
	step "bench: the comparison with other timer libraries, smoke run"
	(cd bench && quiet go run ./cmd/compare -smoke)
fi

step "explore every interleaving of the state protocol (default budget)"
go test -count=1 -run '^TestExplore' .

if command -v spin >/dev/null && command -v gcc >/dev/null; then
	step "spin: the Promela model of the state protocol, and its mutants"
	quiet spin/run.sh
else
	step "spin: skipped, not installed (apt-get install -y spin gcc)"
fi

# A count, not a duration: with -fuzztime 5s, Go before 1.27 can report
# "context deadline exceeded" as a failure when the time runs out while a
# worker is mid-call (go.dev/issue/75804). A count never races a deadline.
step "fuzz the state transitions: 60000 inputs"
quiet go test -run '^$' -fuzz '^FuzzTransitions$' -fuzztime 60000x .

if $long; then
	step "long: a herd of 100,000 jobs on three replicas, every slot once"
	(cd schedule/sqlstore && SQLSTORE_HERD_JOBS=100000 go test -count=1 -timeout 30m -run '^TestHerdExactlyOnce$' .)
fi
step_end

printf 'all checks passed: %d steps in %dm%02ds\n' "$steps" $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60))
