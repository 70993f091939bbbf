// Package sim replays a trace of GPU jobs through the scheduler's real Decide with a simulated clock and no Ray
// (`mvp sim`), and generates such traces (`mvp sim gen`).
package sim

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mvp2/mvp/internal/mvp"
)

// Job is one line of a trace.
type Job struct {
	// Line is the job's line in the CSV file (the header is line 1).
	Line int
	// ArrivalS is when the job is submitted, in seconds from the start of the trace.
	ArrivalS float64
	// NNodes groups of GPUsPerNode GPUs, each on its own node.
	NNodes      int
	GPUsPerNode int
	// DurationS is how long the job really runs.
	DurationS float64
	// MaxRuntimeS is the declared upper bound of the run (0: the configured default).
	MaxRuntimeS int
	// User owns the job ("" in the file: the operator); Priority is its priority (mvp.DefaultPriority when the
	// file gives none).
	User     string
	Priority int
}

// Trace columns, by name.
const (
	ColArrival     = "arrival_s"
	ColNNodes      = "nnodes"
	ColGPUsPerNode = "n_gpus_per_node"
	ColDuration    = "duration_s"
	ColMaxRuntime  = "max_runtime_s"
	ColUser        = "user"
	ColPriority    = "priority"
)

// maxTraceSeconds bounds a trace's times (arrival_s, duration_s): about 31 years, so that any time plus any
// duration still fits the simulator's nanoseconds.
const maxTraceSeconds = 1e9

// ReadCSV reads a trace: a header naming the columns, then one job per line. arrival_s, nnodes, n_gpus_per_node
// and duration_s are required; max_runtime_s is optional (absent or empty: 0, the configured default), so are user
// (absent or empty: the operator) and priority (0..100; absent or empty: 50); other columns are ignored. Jobs are returned in arrival order (ties in file order). A bad value is an error naming
// its line and column.
func ReadCSV(r io.Reader) ([]Job, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	header, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("trace is empty: want a header line naming arrival_s, nnodes, n_gpus_per_node, duration_s")
	}
	if err != nil {
		return nil, fmt.Errorf("trace header: %w", err)
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff") // a byte-order mark (Excel's "CSV UTF-8")
	}
	col := map[string]int{}
	for i, h := range header {
		name := strings.TrimSpace(strings.ToLower(h))
		if _, twice := col[name]; twice && name != "" {
			return nil, fmt.Errorf("trace header (line 1): column %q is named twice (columns %d and %d); name each "+
				"column once", name, col[name]+1, i+1)
		}
		col[name] = i
	}
	for _, name := range []string{ColArrival, ColNNodes, ColGPUsPerNode, ColDuration} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("trace header (line 1) has no column %q (columns are named in the header; found %s)",
				name, strings.Join(header, ","))
		}
	}
	var jobs []Job
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err) // a *csv.ParseError names the line
		}
		line, _ := cr.FieldPos(0)
		field := func(name string) (string, bool) {
			i, ok := col[name]
			if !ok || i >= len(rec) {
				return "", false
			}
			return strings.TrimSpace(rec[i]), true
		}
		bad := func(name, v, want string) error {
			return fmt.Errorf("trace line %d, column %s: %q is not %s", line, name, v, want)
		}
		num := func(name string, integer bool, min float64) (float64, error) {
			v, ok := field(name)
			if !ok || v == "" {
				return 0, fmt.Errorf("trace line %d, column %s: missing value", line, name)
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return 0, bad(name, v, "a number")
			}
			if integer && f != math.Trunc(f) {
				return 0, bad(name, v, "a whole number")
			}
			if f < min {
				return 0, bad(name, v, fmt.Sprintf("a number ≥ %g", min))
			}
			// Counts fit an int32 and times the simulator's nanoseconds: beyond, they would wrap around.
			limit := float64(maxTraceSeconds)
			if integer {
				limit = math.MaxInt32
			}
			if f > limit {
				return 0, bad(name, v, fmt.Sprintf("a number ≤ %g", limit))
			}
			return f, nil
		}
		j := Job{Line: line}
		var f float64
		if j.ArrivalS, err = num(ColArrival, false, 0); err != nil {
			return nil, err
		}
		if f, err = num(ColNNodes, true, 1); err != nil {
			return nil, err
		}
		j.NNodes = int(f)
		if f, err = num(ColGPUsPerNode, true, 1); err != nil {
			return nil, err
		}
		j.GPUsPerNode = int(f)
		if j.DurationS, err = num(ColDuration, false, 0); err != nil {
			return nil, err
		}
		if v, ok := field(ColMaxRuntime); ok && v != "" {
			if f, err = num(ColMaxRuntime, true, 1); err != nil {
				return nil, err
			}
			if f > math.MaxInt32 {
				return nil, bad(ColMaxRuntime, v, "at most 2147483647")
			}
			j.MaxRuntimeS = int(f)
		}
		j.User, _ = field(ColUser)
		j.Priority = mvp.DefaultPriority
		if v, ok := field(ColPriority); ok && v != "" {
			if f, err = num(ColPriority, true, 0); err != nil {
				return nil, err
			}
			if f > mvp.MaxPriority {
				return nil, bad(ColPriority, v, "a priority from 0 to 100")
			}
			j.Priority = int(f)
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, errors.New("trace has a header but no jobs")
	}
	slices.SortStableFunc(jobs, func(a, b Job) int {
		switch {
		case a.ArrivalS < b.ArrivalS:
			return -1
		case a.ArrivalS > b.ArrivalS:
			return 1
		}
		return 0
	})
	return jobs, nil
}

// WriteCSV writes jobs as a trace ReadCSV reads back as the same jobs (times to a tenth of a second).
func WriteCSV(w io.Writer, jobs []Job) error {
	cw := csv.NewWriter(w)
	users := false // the user and priority columns, left out when every job is the operator's at the default priority
	for _, j := range jobs {
		users = users || j.User != "" || j.Priority != mvp.DefaultPriority
	}
	header := []string{ColArrival, ColNNodes, ColGPUsPerNode, ColDuration, ColMaxRuntime}
	if users {
		header = append(header, ColUser, ColPriority)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, j := range jobs {
		maxRuntime := "" // 0 is unset (the configured default), which ReadCSV reads from an empty value only
		if j.MaxRuntimeS != 0 {
			maxRuntime = strconv.Itoa(j.MaxRuntimeS)
		}
		rec := []string{strconv.FormatFloat(j.ArrivalS, 'f', 1, 64), strconv.Itoa(j.NNodes),
			strconv.Itoa(j.GPUsPerNode), strconv.FormatFloat(j.DurationS, 'f', 1, 64), maxRuntime}
		if users {
			rec = append(rec, j.User, strconv.Itoa(j.Priority)) // 0 is priority 0, as ReadCSV reads it
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
