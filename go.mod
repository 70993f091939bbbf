module github.com/mvp2/mvp

go 1.26

require (
	github.com/go-resty/resty/v2 v2.16.5 // indirect
	github.com/mattn/go-sqlite3 v1.14.32 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	golang.org/x/net v0.33.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
