package mvp_test

import (
	"encoding/json"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestJSONErrorSaysWhyANumberDoesNotFit: encoding/json reports a number its field cannot hold as "number 1e400",
// which JSONError turned into "must be a number, got number 1e400" (a user's-eye drill of the Ray door found it).
func TestJSONErrorSaysWhyANumberDoesNotFit(t *testing.T) {
	var v struct {
		GPUs  float64 `json:"gpus"`
		N     int     `json:"n"`
		Small int8    `json:"small"`
		U     uint16  `json:"u"`
		Set   []string
	}
	for body, want := range map[string]string{
		`{"gpus": 1e400}`:             `"gpus" is out of range: 1e400 does not fit in a number`,
		`{"gpus": "1"}`:               `"gpus" must be a number, got a string`,
		`{"n": 1.5}`:                  `"n" must be a whole number, got 1.5`,
		`{"n": 1e3}`:                  `"n" must be a whole number written in digits, got 1e3`,
		`{"n": 2.0}`:                  `"n" must be a whole number written in digits, got 2.0`,
		`{"n": 1e400}`:                `"n" must be a whole number, got 1e400`,
		`{"n": 99999999999999999999}`: `"n" is out of range: 99999999999999999999 is not from -9223372036854775808 to 9223372036854775807`,
		`{"small": 200}`:              `"small" is out of range: 200 is not from -128 to 127`,
		`{"u": -1}`:                   `"u" is out of range: -1 is not from 0 to 65535`,
		`{"u": 70000}`:                `"u" is out of range: 70000 is not from 0 to 65535`,
		`{"Set": "a"}`:                `"Set" must be a list of strings, got a string`,
	} {
		err := json.Unmarshal([]byte(body), &v)
		if err == nil {
			t.Fatalf("%s: decoded", body)
		}
		if got := mvp.JSONError(err).Error(); got != want {
			t.Errorf("%s:\n got %s\nwant %s", body, got, want)
		}
	}
	var n float64
	if got := mvp.JSONError(json.Unmarshal([]byte(`1e400`), &n)).Error(); got != "the body is out of range: 1e400 does not fit in a number" {
		t.Errorf("a bare number: %s", got)
	}
}
