package main

import (
	"log/slog"
	"os"
)

// crashPoint returns the test hook that ends the process at the point named by $MVP_CRASH_POINT, and nil when
// the variable is unset (production). The reliability tests use it to kill mvp at exact moments.
func crashPoint(logger *slog.Logger) func(string) {
	want := os.Getenv("MVP_CRASH_POINT")
	if want == "" {
		return nil
	}
	logger.Warn("crash point armed (tests only)", "point", want)
	return func(point string) {
		if point == want {
			logger.Warn("crash point reached: exiting", "point", point)
			os.Exit(86)
		}
	}
}
