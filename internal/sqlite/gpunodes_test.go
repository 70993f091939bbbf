package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestGPUNodesKnownRoundTrip: the GPU nodes recorded (ids, addresses, totals, labels, or none when a reading could
// not say) and the most seen at once are read back as recorded; a second record replaces the first; the count of
// GPUNodesSeen is not touched by it, nor it by that count.
func TestGPUNodesKnownRoundTrip(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if nodes, most, err := db.GPUNodesKnown(ctx); err != nil || len(nodes) != 0 || most != 0 {
		t.Fatalf("a new database: %v %d %v", nodes, most, err)
	}
	a := mvp.Node{ID: "aa", IP: "10.0.0.1", Total: map[string]float64{"GPU": 4, "CPU": 48}, Labels: map[string]string{"ray.io/node-id": "aa"}}
	b := mvp.Node{ID: "bb", IP: "10.0.0.2", Total: map[string]float64{"GPU": 8}}
	if err := db.RecordGPUNodesKnown(ctx, []mvp.Node{a, b}, 2, at); err != nil {
		t.Fatal(err)
	}
	if err := db.RecordGPUNodesSeen(ctx, 1, at); err != nil {
		t.Fatal(err)
	}
	nodes, most, err := db.GPUNodesKnown(ctx)
	if err != nil || most != 2 || len(nodes) != 2 || nodes[0].ID != "aa" || nodes[0].IP != "10.0.0.1" ||
		nodes[0].Total["GPU"] != 4 || nodes[0].Labels["ray.io/node-id"] != "aa" || nodes[1].Total["GPU"] != 8 ||
		nodes[1].Labels != nil || nodes[0].Alive {
		t.Fatalf("read back: %+v most %d %v", nodes, most, err)
	}
	if n, err := db.GPUNodesSeen(ctx); err != nil || n != 1 {
		t.Errorf("GPUNodesSeen after both records: %d %v", n, err)
	}
	if err := db.RecordGPUNodesKnown(ctx, []mvp.Node{b}, 3, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if nodes, most, err := db.GPUNodesKnown(ctx); err != nil || most != 3 || len(nodes) != 1 || nodes[0].ID != "bb" {
		t.Errorf("after a second record: %+v most %d %v", nodes, most, err)
	}
	if n, err := db.GPUNodesSeen(ctx); err != nil || n != 1 {
		t.Errorf("GPUNodesSeen after the second record: %d %v", n, err)
	}
}
