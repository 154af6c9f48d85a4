module github.com/circulation-go/circulation/cron

go 1.25.0

require (
	github.com/circulation-go/circulation v0.0.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

replace github.com/circulation-go/circulation => ../
