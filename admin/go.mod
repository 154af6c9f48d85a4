module github.com/circulation-go/circulation/admin

go 1.25.0

replace (
	github.com/circulation-go/circulation => ../
	github.com/circulation-go/circulation/cron => ../cron
)

require (
	github.com/chromedp/cdproto v0.159.0
	github.com/chromedp/chromedp v0.23.0
	github.com/circulation-go/circulation v0.0.0
	github.com/circulation-go/circulation/cron v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
