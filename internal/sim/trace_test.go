package sim

import (
	"strings"
	"testing"
)

// TestReadCSVRefusesWhatWouldWrap: malformed quoting is an error naming the line (a quote in the first field
// panicked), numbers beyond what the simulator holds are errors naming the line and column (1e19 nodes wrapped to
// a negative count, a 1e10 s run to a negative time), and a header with a byte-order mark reads as any other.
func TestReadCSVRefusesWhatWouldWrap(t *testing.T) {
	const head = "arrival_s,nnodes,n_gpus_per_node,duration_s,max_runtime_s\n"
	for _, c := range []struct{ in, says string }{
		{"arrival_s,nnodes,n_gpus_per_node,duration_s\n1\"0,1,1,10\n", "line 2"},
		{"arrival_s,nnodes,n_gpus_per_node,duration_s\n\"1\"x,1,1,10\n", "line 2"},
		{head + "0,1e19,1,10,60\n", "line 2, column nnodes"},
		{head + "0,1,1,1e10,3600\n", "line 2, column duration_s"},
		{head + "1e10,1,1,10,60\n", "line 2, column arrival_s"},
		// A column named twice: the last one was used without a word (walk-through 13).
		{"arrival_s,nnodes,n_gpus_per_node,duration_s,nnodes\n0,1,1,10,2\n", "column \"nnodes\" is named twice"},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%q: panic %v", c.in, r)
				}
			}()
			if _, err := ReadCSV(strings.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%q: %v, want an error naming %q", c.in, err, c.says)
			}
		}()
	}
	jobs, err := ReadCSV(strings.NewReader("\ufeffarrival_s,nnodes,n_gpus_per_node,duration_s\r\n0,1,1,10\r\n"))
	if err != nil || len(jobs) != 1 || jobs[0].DurationS != 10 {
		t.Errorf("a header with a byte-order mark: %v %+v", err, jobs)
	}
}

// TestWriteCSVOfATraceWithoutMaxRuntime: a trace read without max_runtime_s (0: the configured default) was
// written with max_runtime_s 0, which ReadCSV refuses (≥ 1): WriteCSV's copy of a trace ReadCSV took did not read
// back. Found by FuzzReadCSV. An unset max_runtime_s is written empty.
func TestWriteCSVOfATraceWithoutMaxRuntime(t *testing.T) {
	jobs, err := ReadCSV(strings.NewReader("arrival_s,nnodes,n_gpus_per_node,duration_s\n0,1,1,10\n5,1,2,20\n"))
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := WriteCSV(&buf, jobs); err != nil {
		t.Fatal(err)
	}
	back, err := ReadCSV(strings.NewReader(buf.String()))
	if err != nil || len(back) != 2 || back[0].MaxRuntimeS != 0 || back[1].GPUsPerNode != 2 {
		t.Errorf("%q read back as %+v, %v", buf.String(), back, err)
	}
}

// TestWriteCSVKeepsPriorityZero: a job of priority 0 (the lowest, as a trace may give it) was written with priority
// 50, WriteCSV taking 0 for "none given": its copy ranked the job as any other. Found by FuzzReadCSV.
func TestWriteCSVKeepsPriorityZero(t *testing.T) {
	jobs, err := ReadCSV(strings.NewReader("arrival_s,nnodes,n_gpus_per_node,duration_s,priority\n0,1,1,10,0\n5,1,1,10,\n"))
	if err != nil || jobs[0].Priority != 0 || jobs[1].Priority != 50 {
		t.Fatalf("%+v %v", jobs, err)
	}
	var buf strings.Builder
	if err := WriteCSV(&buf, jobs); err != nil {
		t.Fatal(err)
	}
	back, err := ReadCSV(strings.NewReader(buf.String()))
	if err != nil || len(back) != 2 || back[0].Priority != 0 || back[1].Priority != 50 {
		t.Errorf("%q read back as %+v, %v", buf.String(), back, err)
	}
}
