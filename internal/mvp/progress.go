package mvp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// ProgressFile is the name of the file a workload may write into its attempt folder to say how far it is
// (MVP_PROGRESS_FILE in the job's environment points at it).
const ProgressFile = "progress.json"

// Bounds of a progress file: mvp reads at most MaxProgressBytes of it; a larger or malformed file is ignored with
// a PROGRESS_INVALID event.
const (
	MaxProgressBytes   = 16 << 10
	maxProgressMetrics = 64
	maxProgressName    = 200
)

// Progress is what a running workload last said of how far it is, as read from its attempt's progress.json.
type Progress struct {
	// AttemptNo is the attempt that wrote it.
	AttemptNo int `json:"attempt_no"`
	// UpdatedAt is the file's modification time: the workload's last heartbeat.
	UpdatedAt       time.Time          `json:"updated_at"`
	PercentComplete *float64           `json:"percent_complete,omitempty"`
	Step            *int64             `json:"step,omitempty"`
	TotalSteps      *int64             `json:"total_steps,omitempty"`
	Name            string             `json:"name,omitempty"`
	Metrics         map[string]float64 `json:"metrics,omitempty"`
}

// ParseProgress reads a progress file's content: one JSON object with optional percent_complete (0..100), step
// and total_steps (≥ 0), name (a string) and metrics (names to finite numbers); other keys are ignored. The
// error says what is wrong, for the PROGRESS_INVALID event.
func ParseProgress(b []byte) (*Progress, error) {
	if len(b) > MaxProgressBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", ProgressFile, MaxProgressBytes)
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%s is not valid UTF-8", ProgressFile)
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%s must hold one JSON object ({\"step\": 10, …})", ProgressFile)
	}
	b = nonFiniteToMarker(b)
	var raw struct {
		PercentComplete *float64                   `json:"percent_complete"`
		Step            *int64                     `json:"step"`
		TotalSteps      *int64                     `json:"total_steps"`
		Name            json.RawMessage            `json:"name"`
		Metrics         map[string]json.RawMessage `json:"metrics"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object of the expected fields: %v", ProgressFile, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		// Not dec.More(), which says false before a stray '}' or ']': "{}}" was taken.
		return nil, fmt.Errorf("%s holds more than one JSON value (or stray characters after its object); write one object", ProgressFile)
	}
	p := &Progress{PercentComplete: raw.PercentComplete, Step: raw.Step, TotalSteps: raw.TotalSteps}
	if v := p.PercentComplete; v != nil && (math.IsNaN(*v) || *v < 0 || *v > 100) {
		return nil, fmt.Errorf("percent_complete must be from 0 to 100, got %g", *v)
	}
	if p.Step != nil && *p.Step < 0 {
		return nil, fmt.Errorf("step must be ≥ 0, got %d", *p.Step)
	}
	if p.TotalSteps != nil && *p.TotalSteps < 0 {
		return nil, fmt.Errorf("total_steps must be ≥ 0, got %d", *p.TotalSteps)
	}
	if raw.Name != nil && string(raw.Name) != "null" {
		if string(raw.Name) == nonFinite || json.Unmarshal(raw.Name, &p.Name) != nil {
			return nil, fmt.Errorf("name must be a string")
		}
		if len(p.Name) > maxProgressName {
			return nil, fmt.Errorf("name is longer than %d bytes", maxProgressName)
		}
	}
	if len(raw.Metrics) > maxProgressMetrics {
		return nil, fmt.Errorf("metrics has %d entries; at most %d", len(raw.Metrics), maxProgressMetrics)
	}
	for k, v := range raw.Metrics {
		if string(v) == nonFinite {
			// NaN, Infinity or -Infinity, as Python's json writes them: a loss that diverged. The metric is left
			// out (JSON holds no such number), and the step and the other metrics are still shown.
			if len(k) > maxProgressName {
				return nil, fmt.Errorf("a metric name is longer than %d bytes", maxProgressName)
			}
			continue
		}
		var f float64
		if string(v) == "null" || json.Unmarshal(v, &f) != nil {
			return nil, fmt.Errorf("metrics.%.40s must be a number", k)
		}
		if len(k) > maxProgressName {
			return nil, fmt.Errorf("a metric name is longer than %d bytes", maxProgressName)
		}
		if p.Metrics == nil {
			p.Metrics = make(map[string]float64, len(raw.Metrics))
		}
		p.Metrics[k] = f
	}
	return p, nil
}

// nonFinite is the JSON text that stands for a bare NaN, Infinity or -Infinity of a progress file once
// nonFiniteToMarker has read it: a string holding a byte that is not UTF-8, which no progress file holds (one that
// does is refused first), so that no value a workload writes reads as it (a string "\u0000mvp:non-finite\u0000"
// did).
const nonFinite = "\"\xffnon-finite\""

// nonFiniteToMarker returns b with each bare NaN, Infinity and -Infinity (outside strings) that stands where a value
// goes replaced by nonFinite. Python's json.dump writes them for float('nan') and float('inf')
// unless told not to, and Go's decoder refuses the whole file for one of them: a run whose loss became NaN had its
// progress frozen at the last finite step, with a PROGRESS_INVALID event at every change of the file. One where a
// key goes is left for the decoder to refuse: made a string, it made '{NaN: 1}' an object.
func nonFiniteToMarker(b []byte) []byte {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b
	}
	marker := []byte(nonFinite)
	out := make([]byte, 0, len(b)+32)
	inString, escaped := false, false
	var open []byte // the containers open at i: '{' or '['
	var last byte   // the last byte outside strings that is not white space
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			open = append(open, c)
		case '}', ']':
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		}
		inList := len(open) > 0 && open[len(open)-1] == '['
		atValue := last == ':' || last == '[' || (last == ',' && inList)
		matched := false
		for _, tok := range []string{"NaN", "Infinity", "-Infinity"} {
			end := i + len(tok)
			if atValue && bytes.HasPrefix(b[i:], []byte(tok)) && (end == len(b) || !isWordByte(b[end])) &&
				(i == 0 || !isWordByte(b[i-1])) {
				out = append(out, marker...)
				i = end - 1
				matched = true
				break
			}
		}
		if !matched {
			out = append(out, c)
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			last = c
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c == '+' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// Text is the progress in words, as `mvp get` and the web page show it: "42% step 17/40", then, when long, the name
// the workload gave and its metrics by name ("42% step 17/40 training loss=1.25"); "" when it said none of these.
func (p *Progress) Text(long bool) string {
	if p == nil {
		return ""
	}
	var parts []string
	if p.PercentComplete != nil {
		parts = append(parts, fmt.Sprintf("%.0f%%", *p.PercentComplete))
	}
	switch {
	case p.Step != nil && p.TotalSteps != nil:
		parts = append(parts, fmt.Sprintf("step %d/%d", *p.Step, *p.TotalSteps))
	case p.Step != nil:
		parts = append(parts, fmt.Sprintf("step %d", *p.Step))
	}
	if long {
		if p.Name != "" {
			parts = append(parts, p.Name)
		}
		names := make([]string, 0, len(p.Metrics))
		for k := range p.Metrics {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			parts = append(parts, fmt.Sprintf("%s=%g", k, p.Metrics[k]))
		}
	}
	return strings.Join(parts, " ")
}
