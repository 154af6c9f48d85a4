#!/bin/sh
# Checks spin/state.pml with the spin model checker: the state protocol
# must hold from version 0 and with the versions wrapping, storms of calls
# included; each of the model's mutants (listed in state.pml) must break
# it, and so must lifting the one exclusion the model makes (EXCLUDE=0).
# Needs spin and a C compiler (Debian: apt-get install -y spin gcc).
# OPS (default 1) is the number of operations added to each situation:
# OPS=1 takes about 20 seconds in all (860 thousand states per correct
# run); OPS=2 is out of reach of a 4 GB memory limit.
set -eu
ops=${OPS:-1}
src=$(cd "$(dirname "$0")" && pwd)/state.pml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
cp "$src" .

# verify runs spin with the given -D flags and prints pan's summary line
# and its count of stored states.
verify() {
	spin "$@" -a state.pml >/dev/null
	# -O0 compiles in a second; the small runs gain nothing from -O2.
	gcc "-O${CFLAGS_OPT:-0}" -DSAFETY -DMEMLIM=4096 -DCOLLAPSE -o pan pan.c
	./pan -m10000 >out 2>&1 || true
	if grep -q 'max search depth too small' out; then
		echo "search depth too small"
		return
	fi
	printf '%s, %s states\n' "$(grep -o 'errors: [0-9]*' out)" "$(awk '/states, stored/ {print $1}' out)"
}

status=0
for start in 0 30; do
	r=$(verify -DOPS="$ops" -DSTART="$start")
	echo "spin: OPS=$ops START=$start: $r"
	case $r in
	"errors: 0,"*) ;;
	*) cat out; status=1 ;;
	esac
done
for m in EXCLUDE=0 MUTANT=1 MUTANT=2 MUTANT=3 MUTANT=4 MUTANT=5 MUTANT=6 \
	MUTANT=7 MUTANT=8 MUTANT=9 MUTANT=10 MUTANT=11; do
	r=$(verify -DOPS="$ops" -DSTART=30 -D"$m")
	echo "spin: OPS=$ops START=30 $m (must fail): $r"
	case $r in
	"errors: "[1-9]*) ;;
	*) cat out; status=1 ;; # no violation found, or no verdict at all
	esac
done
exit $status
