#!/bin/sh
# Checks spin/state.pml with the spin model checker: the state protocol
# must hold from version 0 and with the versions wrapping, storms of calls
# included; each of the model's mutants (listed in state.pml) must break
# it, and so must lifting the one exclusion the model makes (EXCLUDE=0).
# Needs spin and a C compiler (Debian: apt-get install -y spin gcc).
# OPS (default 1) is the number of operations added to each situation.
# With OPS=1 a correct run stores about 1.7 million states, and the whole
# script (20 runs) takes about 30 seconds of CPU, run JOBS (default: the
# number of CPUs) at a time: about 20 seconds on two cores with a load of 2.
# OPS=2 is out of reach: it ran out of 16 GB after 268 million states (no
# violation by then). By hand, without storms and the shape calls (STORM=0
# SHAPE=0), OPS=2 START=30 stores 23 million states in 1.3 GB and 35
# seconds with gcc -O2.
set -eu
ops=${OPS:-1}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 1)}
src=$(cd "$(dirname "$0")" && pwd)/state.pml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# The checks: the -D flags each is compiled with, and whether spin must
# find it correct (pass) or find a violation (fail).
checks="
START=0 pass
START=30 pass
START=30,EXCLUDE=0 fail
START=30,MUTANT=1 fail
START=30,MUTANT=2 fail
START=30,MUTANT=3 fail
START=30,MUTANT=4 fail
START=30,MUTANT=5 fail
START=30,MUTANT=6 fail
START=30,MUTANT=7 fail
START=30,MUTANT=8 fail
START=30,MUTANT=9 fail
START=30,MUTANT=10 fail
START=30,MUTANT=11 fail
START=30,MUTANT=12 fail
START=30,MUTANT=13 fail
START=30,MUTANT=14 fail
START=30,MUTANT=15 fail
START=30,MUTANT=16 fail
START=30,MUTANT=17 fail
"

# dflags turns comma-separated flags into spin's -D options.
dflags() {
	echo "$1" | sed 's/^/-D/; s/,/ -D/g'
}

# verify runs spin in the directory $1 with OPS and the flags $2
# (comma-separated) and leaves pan's summary line and its count of stored
# states in $1/verdict, its whole output in $1/out.
verify() {
	mkdir "$1"
	cd "$1"
	cp "$src" state.pml
	spin -DOPS="$ops" $(dflags "$2") -a state.pml >/dev/null
	# -O0 compiles in a second; the small runs gain nothing from -O2.
	gcc "-O${CFLAGS_OPT:-0}" -DSAFETY -DMEMLIM=4096 -DCOLLAPSE -o pan pan.c
	./pan -m10000 >out 2>&1 || true
	if grep -q 'max search depth too small' out; then
		echo "search depth too small" >verdict
	else
		printf '%s, %s states\n' "$(grep -o 'errors: [0-9]*' out)" \
			"$(awk '/states, stored/ {print $1}' out)" >verdict
	fi
}

n=0
for c in $(echo "$checks" | tr ' ' '/'); do
	n=$((n + 1))
	(verify "$tmp/$n" "${c%/*}") &
	if [ $((n % jobs)) -eq 0 ]; then
		wait
	fi
done
wait

status=0
n=0
for c in $(echo "$checks" | tr ' ' '/'); do
	flags=${c%/*} want=${c#*/}
	n=$((n + 1))
	r=$(cat "$tmp/$n/verdict" 2>/dev/null || echo "no verdict")
	case $want/$r in
	pass/"errors: 0,"*)
		echo "spin: OPS=$ops $flags: $r" ;;
	fail/"errors: "[1-9]*)
		echo "spin: OPS=$ops $flags (must fail): $r" ;;
	*) # a violation, no violation where one was due, or no verdict at all
		echo "spin: OPS=$ops $flags (must $want): $r"
		cat "$tmp/$n/out" 2>/dev/null || true
		if [ -f "$tmp/$n/state.pml.trail" ]; then
			echo "the end of the violating run:"
			(cd "$tmp/$n" && spin -DOPS="$ops" $(dflags "$flags") -t -p state.pml | grep -E '^ *[0-9]+:|assert' | tail -40)
		fi
		status=1 ;;
	esac
done
exit $status
