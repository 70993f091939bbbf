// Package e2e holds the end-to-end tests: they run only with the e2e build tag, against the real Ray cluster that
// scripts/e2e.sh starts (see specs/testing.md), and drive a real `mvp serve` process.
package e2e
