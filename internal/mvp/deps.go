package mvp

// DependencyCycle walks the dependencies of task id (deps returns a task's after_ok and after_any ids) and returns
// a path that leads from id back to id ([id, a, …, id]), or nil when there is none. It visits at most limit tasks;
// past that it reports no cycle.
func DependencyCycle(id string, deps func(string) []string, limit int) []string {
	parent := map[string]string{}
	queue := []string{id}
	seen := map[string]bool{id: true}
	for len(queue) > 0 && len(seen) <= limit {
		cur := queue[0]
		queue = queue[1:]
		for _, d := range deps(cur) {
			if d == id {
				path := []string{id}
				for at := cur; at != id; at = parent[at] {
					path = append(path, at)
				}
				// path is id, cur, …, first step; reverse all but the start, then close the loop.
				for i, j := 1, len(path)-1; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return append(path, id)
			}
			if !seen[d] {
				seen[d] = true
				parent[d] = cur
				queue = append(queue, d)
			}
		}
	}
	return nil
}
