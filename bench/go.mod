module github.com/circulation-go/circulation/bench

go 1.25

replace github.com/circulation-go/circulation => ../

require (
	github.com/circulation-go/circulation v0.0.0-00010101000000-000000000000
	github.com/go-co-op/gocron/v2 v2.21.2
	github.com/google/uuid v1.6.0
	github.com/robfig/cron/v3 v3.0.1
	github.com/zeromicro/go-zero v1.10.3
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/fatih/color v1.18.0 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/spaolacci/murmur3 v1.1.0 // indirect
	go.opentelemetry.io/otel v1.40.0 // indirect
	go.opentelemetry.io/otel/trace v1.40.0 // indirect
	go.uber.org/automaxprocs v1.6.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
)
