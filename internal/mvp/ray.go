package mvp

import (
	"context"
	"encoding/json"
	"io"
	"time"
)

// JobSubmission is the exact body mvp sends to Ray's POST /api/jobs/.
type JobSubmission struct {
	Entrypoint          string             `json:"entrypoint"`
	SubmissionID        string             `json:"submission_id"`
	RuntimeEnv          map[string]any     `json:"runtime_env,omitempty"`
	Metadata            map[string]string  `json:"metadata,omitempty"`
	EntrypointNumCPUs   float64            `json:"entrypoint_num_cpus,omitempty"`
	EntrypointNumGPUs   float64            `json:"entrypoint_num_gpus,omitempty"`
	EntrypointResources map[string]float64 `json:"entrypoint_resources,omitempty"`
	// EntrypointMemory is the driver's memory in bytes; EntrypointLabelSelector the labels its node must have.
	EntrypointMemory        int64             `json:"entrypoint_memory,omitempty"`
	EntrypointLabelSelector map[string]string `json:"entrypoint_label_selector,omitempty"`
	// ShellStartsDriver says that Ray's /bin/sh -c runs the entrypoint as a shell that starts the driver as its
	// child (a Ray-door command that is not one plain Python command, which mvp would exec): a stop sent as Ray
	// starts it misses the driver (scheduler.StopTooSoon). Not sent to Ray.
	ShellStartsDriver bool `json:"-"`
}

// MaxRayConfigBytes is the most a job's runtime_env and metadata may come to as Ray's job supervisor hands them to
// the driver: together, as JSON with every non-ASCII character escaped (RayConfigBytes), in one environment
// variable, which Linux refuses past 128 KiB (MAX_ARG_STRLEN); 8 KiB are left for what Ray adds. A job past it
// fails at start in Ray, after its wait for GPUs.
const MaxRayConfigBytes = 120 << 10

// RayConfigBytes bounds what s's runtime_env and metadata come to as Ray hands them to the driver (PyJSONBytes).
func (s *JobSubmission) RayConfigBytes() int {
	return PyJSONBytes(s.RuntimeEnv) + PyJSONBytes(s.Metadata)
}

// PyJSONBytes bounds the size of v as Python's json.dumps writes it (", " and ": " between items, every
// non-ASCII character as \uXXXX, or two of them beyond the BMP).
func PyJSONBytes(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0 // checked elsewhere
	}
	n := 0
	for _, r := range string(b) {
		switch {
		case r == ',' || r == ':':
			n += 2
		case r < 0x80:
			n++
		case r > 0xFFFF:
			n += 12
		default:
			n += 6
		}
	}
	return n
}

// JobInfo is what Ray's GET /api/jobs/{submission_id} says of a job.
type JobInfo struct {
	SubmissionID   string    `json:"submission_id"`
	JobID          string    `json:"job_id"`
	Status         RayStatus `json:"status"`
	Message        string    `json:"message"`
	ErrorType      string    `json:"error_type"`
	DriverExitCode *int      `json:"driver_exit_code"`
	DriverNodeID   string    `json:"driver_node_id"`
	// StartTime and EndTime are Ray's milliseconds since the epoch; zero when unknown.
	StartTime int64 `json:"start_time"`
	EndTime   int64 `json:"end_time"`
	// Metadata is the job's metadata as submitted (mvp's: mvp, mvp_instance, task_id, attempt_no, …).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// JobLister is a RayClient that can list every job Ray keeps (the loop's check for jobs it does not follow).
type JobLister interface {
	ListJobs(ctx context.Context) ([]*JobInfo, error)
}

// Ray client errors, matched with errors.Is.
var (
	// ErrJobNotFound: Ray answered 404 for the submission id.
	ErrJobNotFound = &Error{Code: CodeNotFound, Message: "ray job not found"}
	// ErrJobExists: Ray already has a job with this submission id.
	ErrJobExists = &Error{Code: CodeConflict, Message: "ray job already exists"}
	// ErrRayUnavailable: Ray could not be reached or answered 5xx for a reason other than the above.
	ErrRayUnavailable = &Error{Code: CodeUnavailable, Message: "ray is unavailable"}
	// ErrSubmitInfra: the submission failed on mvp's side before it reached Ray (a package mvp keeps for the job
	// could not be read); the attempt ends INFRA and is retried as one Ray lost, not failed as one Ray refused.
	ErrSubmitInfra = &Error{Code: CodeUnavailable, Message: "mvp could not prepare the submission"}
	// ErrRayBusy: Ray is up but serves no more requests of this kind now: its state API is at its limit of
	// requests in progress (RAY_STATE_SERVER_MAX_HTTP_REQUEST, 100 by default; log reads and streams count), or
	// mvp holds as many log streams as it allows itself. Always wrapped together with ErrRayUnavailable: no
	// verdict on the job, and no failed try of it either.
	ErrRayBusy = &Error{Code: CodeUnavailable, Message: "ray is busy"}
)

// RayClient is the part of Ray's Job REST API mvp uses. Every call is keyed by submission id.
type RayClient interface {
	SubmitJob(ctx context.Context, s *JobSubmission) error
	GetJob(ctx context.Context, submissionID string) (*JobInfo, error)
	StopJob(ctx context.Context, submissionID string) error
	DeleteJob(ctx context.Context, submissionID string) error
	JobLogs(ctx context.Context, submissionID string) (string, error)
	// CopyJobLog writes a job's whole driver log to w as the file on the driver's node holds it, without holding
	// it in memory, and returns the bytes written; driverNodeID may be "" (then the job server's copy is read).
	// On an error, what was written is incomplete.
	CopyJobLog(ctx context.Context, submissionID, driverNodeID string, w io.Writer) (int64, error)
	// UploadPackage stores a runtime_env package (working_dir, py_modules) in Ray under its URI
	// (gcs://_ray_pkg_<hex>.zip), as Ray's own client uploads it.
	UploadPackage(ctx context.Context, uri string, data []byte) error
}

type schedulerReadKey struct{}

// WithSchedulerRead marks ctx as the scheduler's own read of a driver log (keeping an ended job's log, copying a
// running one, reading a failed run's last lines to judge it). A Ray client gives such reads places of their own:
// readers of logs through the API (a follower copies the log at every poll) may take every place it allows
// readers, and the scheduler's pass, which waits for its copy, must not wait behind them.
func WithSchedulerRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, schedulerReadKey{}, true)
}

// SchedulerRead reports whether ctx was marked by WithSchedulerRead.
func SchedulerRead(ctx context.Context) bool {
	return ctx.Value(schedulerReadKey{}) != nil
}

// LogFollower is a RayClient that can follow a running job's driver log in one stream (the ray package's client
// can). FollowJobLog writes the driver log file on driverNodeID from its first byte to w and goes on writing what
// the driver appends, looking every interval, until ctx is done (its error is returned) or Ray ends the stream.
type LogFollower interface {
	FollowJobLog(ctx context.Context, submissionID, driverNodeID string, interval time.Duration, w io.Writer) (int64, error)
}

// Node is one Ray node as the live per-node view shows it.
type Node struct {
	ID     string `json:"node_id"`
	Alive  bool   `json:"alive"`
	IsHead bool   `json:"is_head"`
	// IP is the node's address as Ray knows it (its raylet's).
	IP        string             `json:"node_ip,omitempty"`
	Total     map[string]float64 `json:"total"`
	Available map[string]float64 `json:"available"`
	// Labels are the node's Ray labels (ray.nodes()' Labels, Ray's own ray.io/… among them); nil when the reading
	// could not say (the dashboard's fallback view): a driver's label selector is then not checked by mvp, only by
	// Ray.
	Labels map[string]string `json:"labels,omitempty"`
}

// PlacementGroup is one Ray placement group, as far as admission needs it.
type PlacementGroup struct {
	ID string `json:"placement_group_id"`
	// CreatorJobID is the hex Ray job id (JobInfo.JobID) that made the group.
	CreatorJobID string `json:"creator_job_id"`
	// State is Ray's: PENDING, PREPARED (placed on its node, not yet committed), CREATED or RESCHEDULING; or
	// REMOVED, which the live probe (ray.Probe) gives a group it read before and no longer reads.
	State string `json:"state"`
	// SchedulingState is e.g. NO_RESOURCES while a PENDING group cannot be placed.
	SchedulingState string               `json:"scheduling_state"`
	Strategy        string               `json:"strategy"`
	Bundles         []map[string]float64 `json:"bundles"`
	// Node is the node all its bundles are on once placed (verl's groups are STRICT_PACK); "" when unknown.
	Node string `json:"node_id,omitempty"`
	// CreatedNs is when Ray's GCS took the group's creation request (unix nanoseconds, the head's clock); 0 when
	// unknown (the dashboard's fallback view). A PENDING group has waited to be placed since then.
	CreatedNs int64 `json:"created_ns,omitempty"`
	// PlacedNs is when Ray placed it (its creation request plus Ray's end-to-end creation latency, unix
	// nanoseconds, the head's clock); 0 while it is not placed, or when unknown.
	PlacedNs int64 `json:"placed_ns,omitempty"`
	// RemovedNs is when the live probe first read the cluster without the group (unix nanoseconds, mvp's clock,
	// as ClusterView.At); 0 for a group not REMOVED, or when unknown.
	RemovedNs int64 `json:"removed_ns,omitempty"`
}

// Placed reports whether Ray has placed the group: CREATED, or PREPARED (the first of Ray's two steps: its node is
// chosen and its bundles are held there; it becomes CREATED once every node has committed them).
func (g *PlacementGroup) Placed() bool { return g.State == "CREATED" || g.State == "PREPARED" }

// ClusterView is one reading of the cluster: every node with its availability, and the placement groups.
type ClusterView struct {
	At     time.Time        `json:"at"`
	Nodes  []Node           `json:"nodes"`
	Groups []PlacementGroup `json:"placement_groups"`
	// Source says where the reading came from: "probe" (live) or "dashboard" (lagging fallback).
	Source string `json:"source"`
	// ProbeError says, on a fallback reading, why the live probe did not answer (e.g. which setting to change).
	ProbeError string `json:"probe_error,omitempty"`
	// Down are GPU nodes that mvp saw alive and Ray now lists as dead, with their totals as last seen alive (Ray
	// keeps none for a dead node), at most as many as the alive GPU nodes fall short of the most mvp has seen
	// alive at once (a node that rejoined under a new id leaves its old entry dead). The scheduler's loop sets it;
	// a reader of the cluster leaves it empty. A gang that fits only with them waits for them (nodes_down), not
	// for ever (never_fits).
	Down []Node `json:"down_nodes,omitempty"`
}

// ClusterReader reads the cluster's live per-node availability.
type ClusterReader interface {
	ReadCluster(ctx context.Context) (*ClusterView, error)
}
