// Package crondiff compares package cron with other Go cron libraries, in
// tests only, so that cron's own module needs none of them: how each reads
// the local times that daylight saving skips or repeats
// (TestPeersDaylightSaving), Next against robfig/cron and
// netresearch/go-cron on random specs in UTC (TestNextAgreesWithPeersInUTC),
// and the speed of Next and Parse against theirs (BenchmarkNext,
// BenchmarkParse).
//
//	cd bench
//	go test -run TestPeersDaylightSaving -v ./crondiff
//	go test -run TestNextAgreesWithPeersInUTC -v ./crondiff
//	go test -run '^$' -bench '^BenchmarkNext$' -count 6 ./crondiff > next.txt
package crondiff
