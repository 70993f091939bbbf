module github.com/mvp2/mvp

go 1.26

require (
	github.com/go-resty/resty/v2 v2.16.5
	github.com/mattn/go-sqlite3 v1.14.32
	gopkg.in/yaml.v3 v3.0.1
)

require github.com/coder/websocket v1.8.15 // indirect

require (
	github.com/robfig/cron/v3 v3.0.1
	golang.org/x/net v0.33.0 // indirect
)
