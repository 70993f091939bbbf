// Package hostscripts holds the tests of the host scripts in v2/scripts (start, stop, status, logs, restart of
// `mvp serve` inside the Ray head container, and worker.sh, which starts a Ray worker with the GPUs `mvp doctor`
// finds). It has no code of its own.
package hostscripts
