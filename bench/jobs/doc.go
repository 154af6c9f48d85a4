// Package jobs compares package schedule with robfig/cron v3 and gocron v2:
// the memory of a million idle jobs (BenchmarkIdleJobs), and the overlap
// bugs reported against gocron, each replayed as a scenario against both
// (TestGocronOverlapScenarios).
//
//	go test -run '^$' -bench IdleJobs -benchtime 1000000x ./jobs
//	go test -run GocronOverlap -v ./jobs
package jobs
