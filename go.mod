module github.com/mvp2/mvp

go 1.26.0

require (
	github.com/NVIDIA/go-nvml v0.13.4-1
	github.com/chromedp/chromedp v0.23.0
	github.com/go-resty/resty/v2 v2.16.5
	github.com/mattn/go-sqlite3 v1.14.32
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.73.1
	gopkg.in/yaml.v3 v3.0.1
)

require github.com/coder/websocket v1.8.15

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pandatix/go-abnf v0.5.3 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

require (
	github.com/robfig/cron/v3 v3.0.1
	golang.org/x/net v0.61.0 // indirect
)
