package api

import (
	"math"
	"net/http"
	"sort"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// UserView is one user as GET /api/v2/users shows it: limits, share, and what fair share and quotas see now.
type UserView struct {
	Name     string `json:"name"`
	Operator bool   `json:"operator"`
	// Removed: the owner of tasks mvp holds is not in v2.auth.users any more; its waiting tasks are held.
	Removed bool `json:"removed"`
	// MaxGPUs, MaxQueued: 0 means no limit.
	MaxGPUs     int     `json:"max_gpus"`
	MaxQueued   int     `json:"max_queued"`
	MaxPriority int     `json:"max_priority"`
	Share       float64 `json:"share"`
	// UsageGPUSeconds is the decayed GPU-seconds fair share ranks by (v2.scheduler.fair_share_half_life_s);
	// NormalizedUsage is it ÷ share.
	UsageGPUSeconds float64 `json:"usage_gpu_seconds"`
	NormalizedUsage float64 `json:"normalized_usage"`
	// GPUsInUse is what the user's live tasks hold (max_gpus counts it); Waiting is their waiting tasks.
	GPUsInUse int `json:"gpus_in_use"`
	Waiting   int `json:"waiting"`
}

// users answers every user (the operator first) with limits, share, decayed usage, GPUs in use and waiting
// tasks. Operator only: it shows everyone's use.
func (s *Server) users(w http.ResponseWriter, r *http.Request) error {
	if err := operatorOnly(r); err != nil {
		return err
	}
	snap, err := s.Snapshot(r.Context())
	if err != nil {
		return err
	}
	usage := snap.Usage
	if usage == nil {
		usage = map[string]float64{} // fair share is off: the loop does not compute it
	}
	views := []UserView{{Name: mvp.Operator, Operator: true, MaxPriority: mvp.MaxPriority, Share: 1}}
	for _, u := range s.Users {
		views = append(views, UserView{Name: u.Name, MaxGPUs: u.MaxGPUs, MaxQueued: u.MaxQueued,
			MaxPriority: u.MaxPriority, Share: u.Share})
	}
	idx := map[string]int{}
	for k := range views {
		idx[views[k].Name] = k
	}
	at := func(owner string) *UserView {
		if owner == "" {
			owner = mvp.Operator
		}
		k, ok := idx[owner]
		if !ok { // a task of a user since removed from the config
			idx[owner] = len(views)
			views = append(views, UserView{Name: owner, Share: 1, Removed: true})
			k = idx[owner]
		}
		return &views[k]
	}
	for owner, gpus := range scheduler.GPUsHeld(s.Clock.Now(), snap, s.Policy) { // as admission counts them
		at(owner).GPUsInUse += int(math.Round(gpus))
	}
	for _, t := range snap.Queue {
		at(t.Owner).Waiting++
	}
	names := make([]string, 0, len(usage))
	for name := range usage {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := at(name)
		v.UsageGPUSeconds = usage[name]
	}
	for k := range views {
		if views[k].Share > 0 {
			views[k].NormalizedUsage = views[k].UsageGPUSeconds / views[k].Share
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"users": views, "fair_share": s.Policy.FairShare,
		"half_life_s": s.Policy.HalfLife.Seconds(), "starvation_s": s.Policy.StarvationBound.Seconds()})
	return nil
}
