package mvp

import (
	"reflect"
	"testing"
)

func TestDependencyCycle(t *testing.T) {
	graph := map[string][]string{
		"new": {"a", "b"},
		"a":   {"c"},
		"b":   {"c", "d"},
		"c":   nil,
		"d":   {"e"},
		"e":   {"new"}, // e names the new task: new → b → d → e → new
	}
	deps := func(id string) []string { return graph[id] }
	if got, want := DependencyCycle("new", deps, 100), []string{"new", "b", "d", "e", "new"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cycle %v, want %v", got, want)
	}
	graph["e"] = nil
	if got := DependencyCycle("new", deps, 100); got != nil {
		t.Errorf("no cycle, got %v", got)
	}
	graph["new"] = []string{"new"}
	if got := DependencyCycle("new", deps, 100); !reflect.DeepEqual(got, []string{"new", "new"}) {
		t.Errorf("self: %v", got)
	}
}
