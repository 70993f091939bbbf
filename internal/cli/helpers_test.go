package cli

import "bytes"

// serverEnv is the environment of a CLI run against the API at url (with a token), and its stdout and stderr.
func serverEnv(url string) (out, errb *bytes.Buffer, env Env) {
	out, errb = &bytes.Buffer{}, &bytes.Buffer{}
	return out, errb, Env{Stdout: out, Stderr: errb, Getenv: func(k string) string {
		if k == "MVP_ADDR" {
			return url
		}
		return "t"
	}}
}
