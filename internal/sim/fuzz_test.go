package sim

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// FuzzReadCSV feeds ReadCSV a trace file as a user gives `mvp sim`. A refusal has a message; a trace taken has jobs
// within the documented bounds, in arrival order, and round-trips: WriteCSV's copy reads back as the same jobs (times
// to WriteCSV's tenth of a second).
func FuzzReadCSV(f *testing.F) {
	const head = "arrival_s,nnodes,n_gpus_per_node,duration_s,max_runtime_s\n"
	for _, s := range []string{
		"user,arrival_s,nnodes,n_gpus_per_node,duration_s\nbob,10,1,2,30\nann,5,2,8,60.5\n",
		"", "arrival_s,nnodes,duration_s\n1,1,1\n", "arrival_s,nnodes,n_gpus_per_node,duration_s\n1,1,1,1\n2,1,x,1\n",
		"arrival_s,nnodes,n_gpus_per_node,duration_s\n1,1.5,1,1\n", head + "1,1,1,1,0\n", head + "0,1,1,10,60\n",
		"arrival_s,nnodes,n_gpus_per_node,duration_s\n1\"0,1,1,10\n", head + "0,1e19,1,10,60\n",
		"arrival_s,nnodes,n_gpus_per_node,duration_s,nnodes\n0,1,1,10,2\n",
		"\ufeffarrival_s,nnodes,n_gpus_per_node,duration_s\r\n0,1,1,10\r\n",
		"# a comment\narrival_s,nnodes,n_gpus_per_node,duration_s,user,priority\n0,1,8,3600,\"ann, the lead\",90\n3.5,2,4,60,,\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		jobs, err := ReadCSV(bytes.NewReader(b))
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("a refusal with no message")
			}
			return
		}
		for i, j := range jobs {
			if j.ArrivalS < 0 || j.ArrivalS > maxTraceSeconds || j.DurationS < 0 || j.DurationS > maxTraceSeconds ||
				j.NNodes < 1 || j.GPUsPerNode < 1 || j.MaxRuntimeS < 0 || j.Priority < 0 || j.Priority > mvp.MaxPriority ||
				j.Line < 2 {
				t.Fatalf("job %d out of bounds: %+v", i, j)
			}
			if i > 0 && jobs[i-1].ArrivalS > j.ArrivalS {
				t.Fatalf("jobs %d and %d out of arrival order", i-1, i)
			}
		}
		var buf bytes.Buffer
		if err := WriteCSV(&buf, jobs); err != nil {
			t.Fatalf("WriteCSV: %v", err)
		}
		back, err := ReadCSV(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("WriteCSV's copy %q does not read back: %v", buf.Bytes(), err)
		}
		if len(back) != len(jobs) {
			t.Fatalf("%d jobs became %d", len(jobs), len(back))
		}
		for i, j := range jobs {
			k := back[i]
			if math.Abs(k.ArrivalS-j.ArrivalS) > 0.05+1e-6 || math.Abs(k.DurationS-j.DurationS) > 0.05+1e-6 ||
				k.NNodes != j.NNodes || k.GPUsPerNode != j.GPUsPerNode || k.MaxRuntimeS != j.MaxRuntimeS ||
				k.User != j.User || k.Priority != j.Priority {
				t.Fatalf("job %d: %+v read back as %+v", i, j, k)
			}
		}
	})
}
