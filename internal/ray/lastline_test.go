package ray

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Ray 2.60's head relays its job agent's failure as a RuntimeError whose message is the agent's traceback and
// ends with a line holding only "." (measured: the logs of a job whose driver printed a byte that is not UTF-8).
// The error said "HTTP 500: ." and hid the cause.
func TestLastLineSkipsALineThatSaysNothing(t *testing.T) {
	body := "Traceback (most recent call last):\n  File \"job_head.py\", line 591, in get_job_logs\n" +
		"RuntimeError: Request failed with status code 500: Traceback (most recent call last):\n" +
		"  File \"job_log_storage_client.py\", line 23, in get_logs\n    return f.read()\n           ^^^^^^^^\n" +
		"UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 197: invalid start byte\n.\n"
	want := "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 197: invalid start byte"
	if got := lastLine([]byte(body)); got != want {
		t.Errorf("lastLine = %q, want %q", got, want)
	}
	for body, want := range map[string]string{
		"":                          "",
		"...":                       "...",
		"ValueError: boom":          "ValueError: boom",
		"a\nValueError: boom\n  \n": "ValueError: boom",
	} {
		if got := lastLine([]byte(body)); got != want {
			t.Errorf("lastLine(%q) = %q, want %q", body, got, want)
		}
	}
}

// TestLastLineCutsBetweenCharacters: a long last line was cut at byte 300 whatever stood there, so an error answer
// in a language beyond ASCII ended in half a character: the error text (an event, an API answer, a log line) was
// not UTF-8. Found by FuzzAnswers's property; it is cut between characters now.
func TestLastLineCutsBetweenCharacters(t *testing.T) {
	for _, body := range []string{"a" + strings.Repeat("é", 200), strings.Repeat("€", 150), "ab" + strings.Repeat("😀", 90)} {
		got := lastLine([]byte(body))
		if !utf8.ValidString(got) || len(got) > 300+len("…") || !strings.HasSuffix(got, "…") {
			t.Errorf("lastLine(%.20q…) = %q (%d bytes)", body, got, len(got))
		}
	}
}

// TestLastLineOfCutsBetweenCharacters: the probe's last line of stderr (the reason a probe that never became ready
// gives) was cut at byte 300 as lastLine was, inside a character of a traceback beyond ASCII.
func TestLastLineOfCutsBetweenCharacters(t *testing.T) {
	got := lastLineOf("Traceback:\nOSError: "+strings.Repeat("é", 200), "probe: ")
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "probe: OSError") || len(got) > len("probe: ")+300+len("…") {
		t.Errorf("lastLineOf = %q (%d bytes)", got, len(got))
	}
}
