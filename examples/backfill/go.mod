module github.com/circulation-go/circulation/examples/backfill

go 1.25.0

replace (
	github.com/circulation-go/circulation => ../..
	github.com/circulation-go/circulation/cron => ../../cron
)

require (
	github.com/circulation-go/circulation v0.0.0
	github.com/circulation-go/circulation/cron v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
