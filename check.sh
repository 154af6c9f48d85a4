#!/usr/bin/env bash
# check.sh is the project's test command, the one CI runs: formatting, go
# vet, staticcheck, the tests under the race detector, the explorers of the
# lock-free protocols, the spin model (if spin is installed), a short fuzz
# run, and every benchmark once so that none of them can rot. It fetches the
# Go tools it needs itself, at pinned versions.
#
# Every step runs, whether the steps before it passed or not. Each prints a
# line when it starts, and a long one a line for each part it starts or
# ends; a step's own output is kept, and shown at the end if the step
# failed. The end is a table of the steps with the time each took, then the
# output of each step that failed; the exit status is 1 if any did.
#
# schedule/sqlstore's tests, which mostly wait on real time, real processes
# and real databases, run beside the other steps, which mostly compute.
#
# ./check.sh -long adds the slow checks: the explorers at their long depths
# (CIRCULATION_EXPLORE=long: minutes, where the default depths, which catch
# every known mutant, take seconds), and the herd of 100,000 jobs on three
# replica processes, on SQLite and PostgreSQL, at the default lease.
#
# ./check.sh -busy runs the checks while loops keep every core busy
# (.ci/busy), as on a machine shared with other work: no test may depend on
# the machine being quiet.
set -uo pipefail
cd "$(dirname "$0")"

usage() {
	echo "usage: ./check.sh [-long] [-busy] | -write-api" >&2
	exit 2
}
long=false
busy=false
write_api=false
for a in "$@"; do
	case $a in
	-long) long=true ;;
	-busy) busy=true ;;
	-write-api) write_api=true ;;
	*) usage ;;
	esac
done
if $write_api && [ $# -gt 1 ]; then
	usage
fi

if $busy; then
	args=()
	if $long; then
		args+=(-long)
	fi
	exec .ci/busy ./check.sh "${args[@]}"
fi

staticcheck=honnef.co/go/tools/cmd/staticcheck@v0.8.2
apidiff=golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4

# The modules whose API is recorded in api/, as module path and folder.
api_modules=(
	"circulation github.com/circulation-go/circulation ."
	"cron github.com/circulation-go/circulation/cron cron"
	"sqlstore github.com/circulation-go/circulation/schedule/sqlstore schedule/sqlstore"
	"admin github.com/circulation-go/circulation/admin admin"
	"otel github.com/circulation-go/circulation/otel otel"
)

# ./check.sh -write-api records the API of each module as the baseline
# that later checks compare with: after an incompatible change, once
# CHANGELOG.md says so.
if $write_api; then
	set -e
	for a in "${api_modules[@]}"; do
		read -r name path dir <<<"$a"
		(cd "$dir" && go run "$apidiff" -m -w "$OLDPWD/api/$name.export" "$path")
	done
	echo "api/ written"
	exit 0
fi

# The explorers' depth (docs/testing.md).
if $long; then
	export CIRCULATION_EXPLORE=${CIRCULATION_EXPLORE:-long}
fi

# Every module of the repository: the library first, then each folder with a
# go.mod of its own (cron/, the SQL store, bench/, example modules).
modules=(.)
while IFS= read -r mod; do
	modules+=("$(dirname "$mod")")
done < <(find . -mindepth 2 -name go.mod -not -path './.git/*' | sort)

work=$(mktemp -d)
bin=$work/bin
mkdir "$bin"
bg_pids=()
cleanup() {
	for p in "${bg_pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Progress goes to file descriptor 3, the terminal's standard output; a
# step's own output goes to its log.
exec 3>&1

# A step is numbered; $work/<n>.name, .log, .status and .secs describe it.
nsteps=0
started=$SECONDS

# note prints a line of progress of the step under way: what it starts
# now, or a test summary line. A step running in the background prefixes
# its name.
note_prefix=""
note() {
	printf '   %s%s\n' "$note_prefix" "$*" >&3
}

# run_step runs the step n, "$@", with its output in its log, and records
# its status and time.
run_step() {
	local n=$1
	shift
	local t0=$SECONDS
	("$@") >"$work/$n.log" 2>&1 </dev/null
	echo $? >"$work/$n.status"
	echo $((SECONDS - t0)) >"$work/$n.secs"
}

# step runs a step in the foreground: step NAME COMMAND [ARG...].
step() {
	local n=$nsteps
	nsteps=$((nsteps + 1))
	echo "$1" >"$work/$n.name"
	printf '== %s\n' "$1"
	shift
	run_step "$n" "$@"
	if [ "$(cat "$work/$n.status")" != 0 ]; then
		printf '   FAILED after %ss (its output is at the end)\n' "$(cat "$work/$n.secs")"
	fi
}

# bg_step starts a step in the background: bg_step SHORT NAME COMMAND
# [ARG...]. Its progress lines are prefixed with SHORT; the table at the
# end waits for it.
bg_step() {
	local n=$nsteps
	nsteps=$((nsteps + 1))
	local short=$1
	echo "$2" >"$work/$n.name"
	printf '== %s (in the background)\n' "$2"
	shift 2
	(
		note_prefix="[$short] "
		run_step "$n" "$@"
		if [ "$(cat "$work/$n.status")" = 0 ]; then
			note "done in $(cat "$work/$n.secs")s"
		else
			note "FAILED after $(cat "$work/$n.secs")s (its output is at the end)"
		fi
	) &
	bg_pids+=($!)
}

# gotest runs go test "$@" and notes each package's summary line as it
# comes: ok, FAIL, or a panic.
gotest() {
	go test "$@" 2>&1 | while IFS= read -r l; do
		printf '%s\n' "$l"
		case $l in
		ok* | FAIL* | panic:*) note "$l" ;;
		esac
	done
}

# gotest_failures is gotest noting failures only.
gotest_failures() {
	go test "$@" 2>&1 | while IFS= read -r l; do
		printf '%s\n' "$l"
		case $l in
		FAIL* | panic:*) note "$l" ;;
		esac
	done
}

# runtest runs a test binary built with go test -c in the folder of its
# package, as go test would: runtest LABEL DIR BINARY [FLAG...]. It notes
# a summary line as go test does, with LABEL.
runtest() {
	local label=$1 dir=$2 exe=$3
	shift 3
	local t0=$SECONDS code=0
	(cd "$dir" && "$exe" "$@") || code=$?
	if [ $code = 0 ]; then
		note "ok   $label ($((SECONDS - t0))s)"
	else
		note "FAIL $label ($((SECONDS - t0))s)"
	fi
	return $code
}

# parallel runs each of its arguments, a command line, at once, and
# fails if any fails.
parallel() {
	local pids=() code=0
	for c in "$@"; do
		eval "$c" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || code=1
	done
	return $code
}

## The steps.

gofmt_step() {
	local unformatted
	unformatted=$(gofmt -l .) || return 1
	if [ -n "$unformatted" ]; then
		echo "not gofmt-ed:"
		echo "$unformatted"
		return 1
	fi
}

lint_step() {
	local code=0
	cd "$1"
	note "go mod tidy -diff"
	go mod tidy -diff || code=1
	note "go vet"
	go vet ./... || code=1
	note "go vet on a 32-bit target" # wheel's timer size is checked at compile time
	GOARCH=386 go vet ./... || code=1
	note "staticcheck (go run builds it, the first time)"
	go run "$staticcheck" ./... || code=1
	return $code
}

race_step() {
	cd "$1"
	shift
	gotest -race -count=1 "$@" ./...
}

# bench_step runs every benchmark once, in every module, so that none can
# rot: no figures (docs/performance.md says how to measure).
bench_step() {
	local m code=0
	for m in "${modules[@]}"; do
		note "$m"
		(cd "$m" && gotest_failures -short -run '^$' -bench . -benchtime 1x ./...) || code=1
	done
	return $code
}

api_step() {
	local code=0 a name path dir now changes
	for a in "${api_modules[@]}"; do
		read -r name path dir <<<"$a"
		note "$name"
		now=$(mktemp)
		(cd "$dir" && go run "$apidiff" -m -w "$now" "$path") || code=1
		changes=$(go run "$apidiff" -m -incompatible "api/$name.export" "$now" 2>/dev/null || true)
		rm -f "$now"
		if [ -n "$changes" ]; then
			echo "$name: incompatible with api/$name.export:"
			echo "$changes"
			echo "say so in CHANGELOG.md, then record the new API: ./check.sh -write-api"
			code=1
		fi
	done
	return $code
}

# explore_parts are the explorers' independent parts, each a pattern of
# test names run by a test binary of its own, beside the others: the state
# protocol, the slot, the shape (FireWithin, Close, Shutdown), the shape's
# mutants (one of them takes 20 seconds), and the rest (the other mutants,
# the Supervisor, the symmetry reduction).
explore_parts=(
	'^TestExploreStateProtocol$'
	'^TestExploreSlotProtocol$'
	'^TestExploreShape$'
	'^TestExploreShapeMutants$'
	'^TestExplore(Mutants|SlotMutants|Supervisor|SupervisorMutants|SymmetryReductionIsExact)$'
)

# explore_step runs the explorers, each part in a process of its own, from
# one test binary: the library's, without the race detector, which has
# nothing to find in an explorer (it runs on one goroutine) and slows it
# sevenfold. Every test named TestExplore* must be in a part: the race
# step skips them all.
explore_step() {
	note "go test -c (the library's test binary)"
	go test -c -o "$bin/circulation.test" . || return 1
	local name p covered missing=0
	while IFS= read -r name; do
		case $name in TestExplore*) ;; *) continue ;; esac
		covered=false
		for p in "${explore_parts[@]}"; do
			if [[ $name =~ $p ]]; then
				covered=true
			fi
		done
		if ! $covered; then
			echo "$name is in no part of explore_parts in check.sh"
			missing=1
		fi
	done < <("$bin/circulation.test" -test.list '^TestExplore')
	local cmds=()
	for p in "${explore_parts[@]}"; do
		cmds+=("runtest '$p' . '$bin/circulation.test' -test.count=1 -test.timeout=30m -test.v -test.run '$p'")
	done
	note "${#explore_parts[@]} parts at once, depth ${CIRCULATION_EXPLORE:-default}"
	parallel "${cmds[@]}" || return 1
	return $missing
}

spin_step() {
	spin/run.sh
}

# A count, not a duration: with -fuzztime 5s, Go before 1.27 can report
# "context deadline exceeded" as a failure when the time runs out while a
# worker is mid-call (go.dev/issue/75804). A count never races a deadline.
fuzz_step() {
	go test -run '^$' -fuzz '^FuzzTransitions$' -fuzztime 60000x .
}

herd_step() {
	cd schedule/sqlstore
	SQLSTORE_HERD_JOBS=100000 gotest -count=1 -timeout 30m -run '^TestHerdExactlyOnce$' .
}

## The order: the waiting step first, in the background; then the others.

# sqlstore's suite runs in two processes at once, each with a PostgreSQL of
# its own: it mostly waits (leases, polls, replica processes), and two
# halves take little longer than the longer one. sqlstore_long names its
# longest tests, about half of its time (go test -json's Elapsed); the
# herds, whose writes fill the disk, run in it one after the other with
# the rolling restart, whose SQLite replicas otherwise waited on the disk
# past their lease, and with the herds shared by several Stores, whose
# pools beside the others' ran PostgreSQL out of connections.
sqlstore_long='^(TestFollowDefinitions|TestRollingRestart|TestHerdKillDuringBatchedClaims|TestHerdExactlyOnce|TestClusterMutants|TestShareOfAHerd|TestShareWhileNodesComeAndGo)$'

sqlstore_race() {
	note "go test -race -c"
	(cd schedule/sqlstore && go test -race -c -o "$bin/sqlstore.test" .) || return 1
	local want got
	want=$(tr '|' '\n' <<<"$sqlstore_long" | wc -l)
	got=$(cd schedule/sqlstore && "$bin/sqlstore.test" -test.list "$sqlstore_long" | wc -l)
	if [ "$got" != "$want" ]; then
		echo "sqlstore_long in check.sh names $want tests, of which $got exist"
		return 1
	fi
	parallel \
		"runtest 'schedule/sqlstore -race, its longest tests' schedule/sqlstore '$bin/sqlstore.test' -test.count=1 -test.timeout=20m -test.run '$sqlstore_long'" \
		"runtest 'schedule/sqlstore -race, the others' schedule/sqlstore '$bin/sqlstore.test' -test.count=1 -test.timeout=20m -test.skip '$sqlstore_long'" || return 1
	note "go test -race ./sqlstoretest"
	(cd schedule/sqlstore && gotest -race -count=1 ./sqlstoretest)
}

step "gofmt" gofmt_step
step "./schedule/sqlstore: go mod tidy, go vet (and on a 32-bit target), staticcheck" lint_step ./schedule/sqlstore
bg_step sqlstore "./schedule/sqlstore: go test -race" sqlstore_race
for m in "${modules[@]}"; do
	if [ "$m" != ./schedule/sqlstore ]; then
		step "$m: go mod tidy, go vet (and on a 32-bit target), staticcheck" lint_step "$m"
	fi
done
for m in "${modules[@]}"; do
	case $m in
	./schedule/sqlstore) ;;
	.) step "$m: go test -race (the explorers run below, deeper, without it)" race_step "$m" -skip '^TestExplore' ;;
	*) step "$m: go test -race" race_step "$m" ;;
	esac
done
step "explore every interleaving of the lock-free protocols, and their mutants" explore_step
if command -v spin >/dev/null && command -v gcc >/dev/null; then
	step "spin: the Promela model of the state protocol, and its mutants" spin_step
else
	step "spin: skipped, not installed (apt-get install -y spin gcc)" true
fi
step "fuzz the state transitions: 60000 inputs" fuzz_step
step "every benchmark once, in every module, so that none can rot (no figures: see docs)" bench_step
step "API: incompatible changes against the baseline in api/" api_step
if [ -f bench/go.mod ]; then
	step "bench: the comparison with other timer libraries, smoke run" sh -c 'cd bench && go run ./cmd/compare -smoke'
fi
if $long; then
	step "long: a herd of 100,000 jobs on three replicas, every slot once" herd_step
fi

if [ ${#bg_pids[@]} -gt 0 ]; then
	printf '== waiting for the steps in the background\n'
	wait "${bg_pids[@]}"
fi
bg_pids=()

## The summary: a table of the steps, then the output of those that failed.

failed=()
printf '\n%-7s %6s  %s\n' status time step
for ((n = 0; n < nsteps; n++)); do
	status=$(cat "$work/$n.status" 2>/dev/null || echo "?")
	name=$(cat "$work/$n.name")
	if [ "$status" = 0 ]; then
		result=ok
	else
		result=FAILED
		failed+=("$n")
	fi
	printf '%-7s %5ss  %s\n' "$result" "$(cat "$work/$n.secs" 2>/dev/null || echo "?")" "$name"
done
total=$((SECONDS - started))
for n in "${failed[@]}"; do
	printf '\n== FAILED: %s\n' "$(cat "$work/$n.name")"
	cat "$work/$n.log"
done
if [ ${#failed[@]} -gt 0 ]; then
	printf '\n%d of %d steps failed, in %dm%02ds:\n' "${#failed[@]}" "$nsteps" $((total / 60)) $((total % 60))
	for n in "${failed[@]}"; do
		printf '  %s\n' "$(cat "$work/$n.name")"
	done
	exit 1
fi
printf '\nall checks passed: %d steps in %dm%02ds\n' "$nsteps" $((total / 60)) $((total % 60))
