module github.com/mvp2/mvp

go 1.26

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/go-resty/resty/v2 v2.16.5
	github.com/mattn/go-sqlite3 v1.14.32
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
)

require (
	github.com/robfig/cron/v3 v3.0.1
	golang.org/x/net v0.33.0 // indirect
)
