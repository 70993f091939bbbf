// Package raycompat is mvp's Ray-Jobs-compatible front door: the handlers of Ray 2.60's Job REST API (as its own
// `ray job` CLI and JobSubmissionClient speak it), which internal/api mounts under /ray behind the same token. A
// submission becomes an mvp task of workload ray_job and goes through mvp's queue and gang admission; every
// answer is derived from mvp's state.
package raycompat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// RayVersion is the Ray version the door speaks for (the pinned wheel's); Ray's client checks it is ≥ 2.8 for the
// features it uses.
const RayVersion = "2.60.0"

// MaxPackageBytes is Ray's dashboard body limit, the door's cap on an uploaded package.
const MaxPackageBytes = 100 << 20

// Door serves Ray's Job API from mvp's queue. Cancel, ReadLog and NewID are the API's own (internal/api sets
// them when it mounts the door).
type Door struct {
	Store    mvp.Store
	Packages Packages
	// Prepare checks a Ray request and returns its ray_job task (workload.PrepareRayJob with dev.yaml's settings).
	Prepare func(*mvp.RayJobRequest) (*mvp.Task, error)
	// Build makes an attempt's Ray submission; the door shows a jobspec task's entrypoint from it.
	Build scheduler.Builder
	// Cancel cancels a task as POST /api/v2/tasks/{id}/cancel does and returns it.
	Cancel func(ctx context.Context, t *mvp.Task) (*mvp.Task, error)
	// ReadLog returns attempt n's driver log and whether the attempt has ended.
	ReadLog func(ctx context.Context, taskID string, n int) (string, bool, error)
	// CopyLogFrom writes attempt n's log from byte skip on to w, streamed, and returns the bytes written and whether
	// the attempt has ended (the logs answer and a tail send a log so, never holding it whole); nil means ReadLog's
	// text (cut at skip).
	// An error wrapping ErrLogLost says that what was written is all there is.
	CopyLogFrom func(ctx context.Context, taskID string, n int, skip int64, w io.Writer) (int64, bool, error)
	// FollowLogFrom writes attempt n's log from byte skip on to w as it grows, for as long as one stream from Ray
	// lasts or until the attempt ends (then the log whole; ended); nil means a tail polls the log.
	FollowLogFrom func(ctx context.Context, taskID string, n int, skip int64, w io.Writer) (wrote int64, ended, streamed bool, err error)
	// NewID makes a task id (try counts collisions).
	NewID  func(w mvp.Workload, now time.Time, try int) string
	Clock  mvp.Clock
	Logger *slog.Logger
	// Wake asks the scheduler for a tick; may be nil.
	Wake func()
	// Health is the scheduler's latest reading of Ray (a waiting job says when Ray's cluster cannot be read); may
	// be nil.
	Health func() scheduler.Health
	// Observer counts the tasks the door makes (mvp_tasks_submitted_total); nil counts nothing.
	Observer mvp.Observer
	// MaxBodyBytes caps a submission's body; package uploads are capped at MaxPackageBytes.
	MaxBodyBytes int64
	// LogPoll is the period at which a tailed log is read again.
	LogPoll time.Duration

	stopOnce sync.Once
	stopped  chan struct{}
}

// stopping returns the channel Shutdown closes.
func (d *Door) stopping() chan struct{} {
	d.stopOnce.Do(func() { d.stopped = make(chan struct{}) })
	return d.stopped
}

// Shutdown ends the log tails (they are hijacked connections, which the HTTP server's own shutdown does not wait
// for) with a "going away" close; the clients then ask for the job's status. Call it once, when the server stops.
func (d *Door) Shutdown() { close(d.stopping()) }

// Route is one endpoint of the door, its pattern relative to the mount point.
type Route struct {
	Method, Pattern string
	Handle          func(http.ResponseWriter, *http.Request) error
}

// Routes lists the door's endpoints: every request Ray 2.60's job client makes.
func (d *Door) Routes() []Route {
	return []Route{
		{"GET", "/api/version", d.version},
		{"POST", "/api/jobs/{$}", d.submit},
		{"GET", "/api/jobs/{$}", d.list},
		{"GET", "/api/jobs/{id}", d.get},
		{"DELETE", "/api/jobs/{id}", d.delete},
		{"POST", "/api/jobs/{id}/stop", d.stop},
		{"GET", "/api/jobs/{id}/logs", d.logs},
		{"GET", "/api/jobs/{id}/logs/tail", d.tail},
		{"GET", "/api/packages/{protocol}/{name}", d.getPackage},
		{"PUT", "/api/packages/{protocol}/{name}", d.putPackage},
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(v)
}

func (d *Door) version(w http.ResponseWriter, r *http.Request) error {
	// version "4" is Ray 2.60's job API version: the client tails logs only when it is an integer > 0.
	writeJSON(w, map[string]string{"version": "4", "ray_version": RayVersion, "ray_commit": "mvp", "session_name": "mvp"})
	return nil
}

// submitRequest is Ray's JobSubmitRequest: unknown keys are refused, as Ray's dataclass refuses them.
type submitRequest struct {
	mvp.RayJobRequest
	// JobID is the deprecated name of submission_id.
	JobID *string `json:"job_id"`
}

func (d *Door) submit(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, d.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return mvp.Errorf(mvp.CodeTooLarge, "", "the job submission is larger than %d bytes", d.MaxBodyBytes)
		}
		return mvp.Errorf(mvp.CodeInvalid, "", "reading the body failed: %v", err)
	}
	if !utf8.Valid(body) {
		// Go's decoder would turn each such byte into U+FFFD: the job would run an entrypoint not sent.
		return mvp.Errorf(mvp.CodeInvalid, "", "the job submission is not valid UTF-8 JSON")
	}
	if mvp.LoneSurrogate(body) {
		// Go's decoder would make it U+FFFD: the job would run an entrypoint not sent.
		return mvp.Errorf(mvp.CodeInvalid, "", "the job submission %s", mvp.LoneSurrogateWhy)
	}
	var req submitRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if key := notStringMetadata(body); key != "" {
			// Go's decoder names the map, not the key: the user needs the key.
			return mvp.Errorf(mvp.CodeInvalid, "metadata", "metadata.%s must be a string (Ray's metadata maps names to "+
				"strings)", shown(key))
		}
		return mvp.Errorf(mvp.CodeInvalid, "", "the job submission is not a JobSubmitRequest: %v", mvp.JSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		// The rest would be dropped unread; Ray's job server refuses it (Python's json: "Extra data").
		return mvp.Errorf(mvp.CodeInvalid, "", "the job submission holds more than one JSON value; send one object")
	}
	if err := exactKeys(body); err != nil {
		return err
	}
	if req.JobID != nil && req.SubmissionID == "" {
		req.SubmissionID = *req.JobID
	}
	if req.SubmissionID != "" {
		if err := checkSubmissionID(req.SubmissionID); err != nil {
			return err
		}
		// find takes an attempt's Ray submission id for its job: taken, as a task id is (CreateTask).
		if taskID, _, ok := mvp.ParseSubmissionID(req.SubmissionID); ok {
			if _, err := d.Store.GetTask(r.Context(), taskID); err == nil {
				return mvp.Errorf(mvp.CodeConflict, "submission_id", "Job with submission_id %s already exists (it names "+
					"an attempt of job %s). Please use a different submission_id.", shown(req.SubmissionID), taskID)
			} else if mvp.ErrorCode(err) != mvp.CodeNotFound {
				return fmt.Errorf("submit ray job: %w", err)
			}
		}
	}
	now := d.Clock.Now().UTC()
	d.Packages.Used(packageURIs(req.RuntimeEnv))
	var t *mvp.Task
	for i := 0; ; i++ {
		id := d.NewID(mvp.WorkloadRayJob, now, i)
		rq := req.RayJobRequest
		if rq.SubmissionID == "" {
			rq.SubmissionID = id
		}
		if t, err = d.Prepare(&rq); err != nil {
			return err
		}
		t.JobSpecYAML = string(body) // the request as sent; the effective spec shows what mvp added
		t.ID, t.State, t.CreatedAt, t.UpdatedAt = id, mvp.StateQueued, now, now
		err = d.Store.CreateTask(r.Context(), t)
		// A task id taken by another task is tried again; a submission id the user chose is theirs to change.
		if !errors.Is(err, mvp.ErrTaskIDTaken) || i >= 16 {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("submit ray job: %w", err)
	}
	mvp.ObserverOr(d.Observer).TaskSubmitted(t.Workload)
	if d.Wake != nil {
		d.Wake()
	}
	d.Logger.Info("ray job submitted", "task_id", t.ID, "submission_id", t.SubmissionID)
	writeJSON(w, map[string]string{"job_id": t.SubmissionID, "submission_id": t.SubmissionID})
	return nil
}

// submitKeys are the keys of a JobSubmitRequest, from submitRequest's tags.
var submitKeys = func() map[string]bool {
	keys := map[string]bool{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous {
				add(f.Type)
				continue
			}
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				keys[name] = true
			}
		}
	}
	add(reflect.TypeOf(submitRequest{}))
	return keys
}()

// exactKeys refuses a key of a JobSubmitRequest that is not spelt as Ray spells it: Go's decoder matches keys
// whatever their case, Ray's dataclass does not ("Entrypoint" is 400 there), and a request the door takes should
// be one Ray takes.
func exactKeys(body []byte) error {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return nil // the decoder above said what is wrong with it
	}
	for k := range top {
		if !submitKeys[k] {
			return mvp.Errorf(mvp.CodeInvalid, "", "the job submission is not a JobSubmitRequest: json: unknown field %q (keys are lower case, as Ray spells them)", k)
		}
	}
	return nil
}

// checkSubmissionID refuses ids that Ray's client cannot put into a URL path as they are.
func checkSubmissionID(id string) error {
	if len(id) > 256 {
		return mvp.Errorf(mvp.CodeInvalid, "submission_id", "submission_id is %d bytes long; at most 256", len(id))
	}
	if id == "." || id == ".." {
		// Ray's client and every URL path resolve them away: /api/jobs/. is the list of jobs.
		return mvp.Errorf(mvp.CodeInvalid, "submission_id", "submission_id %q cannot stand in a URL path; use letters, digits, '-', '_' and '.'", id)
	}
	for _, c := range id {
		if c == '/' || c == '?' || c == '#' || c == '%' || unicode.IsSpace(c) || !unicode.IsPrint(c) {
			return mvp.Errorf(mvp.CodeInvalid, "submission_id", "submission_id %q has %q: Ray's client puts it into a URL path unescaped; use letters, digits, '-', '_' and '.'", clip(id), c)
		}
	}
	return nil
}

// find returns the task a path's {id} names: a submission id the door knows, else an mvp task id, else the Ray
// submission id of one of a task's attempts (<task_id>--a01: the id the first line of the driver's log names, as
// Ray's job manager writes it), else the Ray job id of a task's latest attempt (JobDetails.job_id).
func (d *Door) find(r *http.Request) (*mvp.Task, error) {
	id := r.PathValue("id")
	t, err := d.Store.TaskBySubmissionID(r.Context(), id)
	if mvp.ErrorCode(err) != mvp.CodeNotFound {
		return t, err
	}
	t, err = d.Store.GetTask(r.Context(), id)
	if mvp.ErrorCode(err) == mvp.CodeNotFound {
		if taskID, n, ok := mvp.ParseSubmissionID(id); ok {
			t, err = d.Store.GetTask(r.Context(), taskID)
			if err == nil && n > t.LatestAttemptNo {
				err = mvp.Errorf(mvp.CodeNotFound, "", "task %s has no attempt %d", taskID, n)
			}
		}
	}
	if mvp.ErrorCode(err) == mvp.CodeNotFound && rayJobIDPattern.MatchString(id) {
		// The job id the door shows (JobDetails.job_id, its latest attempt's driver's): Ray's own server looks a
		// job up by it first (find_job_by_ids), and its SDK takes "the job ID or submission ID".
		t, err = d.Store.TaskByRayJobID(r.Context(), id)
	}
	if mvp.ErrorCode(err) == mvp.CodeNotFound || (err == nil && t.DoorDeleted) {
		return nil, mvp.Errorf(mvp.CodeNotFound, "", "Job %s does not exist", shown(id))
	}
	return t, err
}

// rayJobIDPattern is a Ray job id as its job server shows it: the hex of a few bytes ("02000000").
var rayJobIDPattern = regexp.MustCompile(`^[0-9a-f]{8,40}$`)

func (d *Door) get(w http.ResponseWriter, r *http.Request) error {
	t, err := d.find(r)
	if err != nil {
		return err
	}
	writeJSON(w, d.details(t))
	return nil
}

// list answers every task not deleted through the door, newest first, ray_job tasks and jobspec tasks alike. It
// reads them one by one and stops once the request's context ends (its client timed out or left): the store's
// reads run to their end, so they would not stop it.
func (d *Door) list(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	out := []jobDetails{}
	f := mvp.TaskFilter{Limit: 500}
	for {
		page, next, err := d.Store.ListTasks(ctx, f)
		if err != nil {
			return err
		}
		for _, t := range page {
			if t.DoorDeleted {
				continue
			}
			if err := ctx.Err(); err != nil { // not logged as a failure: the client left, or mvp is stopping
				return fmt.Errorf("list jobs: %w", mvp.Errorf(mvp.CodeUnavailable, "",
					"the request ended before every job was read (%v): ask again", err))
			}
			full, err := d.Store.GetTask(ctx, t.ID)
			if err != nil {
				return err
			}
			out = append(out, d.details(full))
		}
		if next == "" {
			break
		}
		f.Cursor = next
	}
	writeJSON(w, out)
	return nil
}

func (d *Door) stop(w http.ResponseWriter, r *http.Request) error {
	t, err := d.find(r)
	if err != nil {
		return err
	}
	if t.State.Terminal() {
		// Canceled and its driver not stopped yet: Ray answers true for a job that has not ended.
		writeJSON(w, map[string]bool{"stopped": !ended(t)})
		return nil
	}
	if _, err := d.Cancel(r.Context(), t); err != nil {
		if mvp.ErrorCode(err) == mvp.CodeConflict {
			writeJSON(w, map[string]bool{"stopped": false}) // it ended meanwhile
			return nil
		}
		return err
	}
	writeJSON(w, map[string]bool{"stopped": true})
	return nil
}

// delete removes an ended job from the door's answers (its submission id may then be used again); the mvp task
// stays, with its attempts, logs and history, and a DOOR_DELETED event. A job that has not ended is refused, as
// Ray refuses it.
func (d *Door) delete(w http.ResponseWriter, r *http.Request) error {
	t, err := d.find(r)
	if err != nil {
		return err
	}
	if !ended(t) {
		return mvp.Errorf(mvp.CodeConflict, "", "Attempted to delete job '%s', but it is in a non-terminal state %s.",
			r.PathValue("id"), d.details(t).Status)
	}
	if err := d.Store.DeleteFromDoor(r.Context(), t.ID, d.Clock.Now()); err != nil {
		return err
	}
	writeJSON(w, map[string]bool{"deleted": true})
	return nil
}

// logs answers the driver log of the task's latest attempt: "" while it has none, and for an attempt with no log
// kept (Ray refused it, so no driver ran), as Ray answers for a job whose driver never started.
func (d *Door) logs(w http.ResponseWriter, r *http.Request) error {
	t, err := d.find(r)
	if err != nil {
		return err
	}
	if t.LatestAttemptNo > 0 && d.CopyLogFrom != nil {
		// Streamed as it is read (a training's log may be gigabytes): the same JSON as writeJSON's.
		jw := &jsonLogWriter{w: w}
		_, _, err := d.CopyLogFrom(r.Context(), t.ID, t.LatestAttemptNo, 0, jw)
		if errors.Is(err, ErrLogLost) {
			err = nil // Ray's clients have no way to be told: the copy is answered as it is
		}
		if jw.werr != nil {
			return nil // the client went away
		}
		if err != nil && jw.started {
			// Part of the log was answered with 200: cut the answer off, so that the client fails rather than take
			// part of the log for all of it.
			d.Logger.Warn("logs: the log could not be read to its end", "task_id", t.ID, "attempt_no",
				t.LatestAttemptNo, "err", err)
			panic(http.ErrAbortHandler)
		}
		if err != nil && mvp.ErrorCode(err) != mvp.CodeNotFound {
			return err
		}
		return jw.end()
	}
	text := ""
	if t.LatestAttemptNo > 0 {
		text, _, err = d.ReadLog(r.Context(), t.ID, t.LatestAttemptNo)
		if mvp.ErrorCode(err) == mvp.CodeNotFound {
			text = ""
		} else if err != nil {
			return err
		}
	}
	writeJSON(w, map[string]string{"logs": text})
	return nil
}

// jsonLogWriter writes the answer {"logs": <what is written to it>} as writeJSON would write it, as the log
// comes: the status and the answer's beginning with the first bytes, each piece encoded as encoding/json encodes
// a string (a byte that is not UTF-8 as U+FFFD), a character cut between two writes held until it is whole.
type jsonLogWriter struct {
	w       http.ResponseWriter
	started bool
	held    []byte
	werr    error // writing to the client failed
}

// jsonLogPiece bounds what is encoded at once.
const jsonLogPiece = 64 << 10

func (j *jsonLogWriter) start() error {
	if j.started {
		return nil
	}
	j.started = true
	j.w.Header().Set("Content-Type", "application/json")
	j.w.WriteHeader(http.StatusOK)
	_, j.werr = io.WriteString(j.w, `{"logs":"`)
	return j.werr
}

func (j *jsonLogWriter) Write(p []byte) (int, error) {
	if err := j.start(); err != nil {
		return 0, err
	}
	for done := 0; done < len(p); {
		k := min(len(p)-done, jsonLogPiece)
		buf := append(j.held, p[done:done+k]...)
		cut := len(buf)
		// A character whose first bytes end this piece waits for the rest.
		for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax+1; i-- {
			if utf8.RuneStart(buf[i]) {
				if !utf8.FullRune(buf[i:]) {
					cut = i
				}
				break
			}
		}
		if err := j.encode(buf[:cut]); err != nil {
			return done, err
		}
		j.held = append(j.held[:0:0], buf[cut:]...)
		done += k
	}
	return len(p), nil
}

// encode writes b as the inside of a JSON string.
func (j *jsonLogWriter) encode(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	q, err := json.Marshal(string(b))
	if err != nil {
		return fmt.Errorf("encode the log: %w", err)
	}
	_, j.werr = j.w.Write(q[1 : len(q)-1])
	return j.werr
}

// end writes what is held and the answer's end (the whole answer when nothing was written).
func (j *jsonLogWriter) end() error {
	if err := j.start(); err != nil {
		return nil // the client went away
	}
	if err := j.encode(j.held); err != nil {
		return nil
	}
	_, _ = io.WriteString(j.w, "\"}\n")
	return nil
}

func (d *Door) getPackage(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	ok, err := d.Packages.Has(r.PathValue("protocol"), name, func() (bool, error) {
		inUse, err := d.packagesInUse(r.Context())
		if err != nil {
			return false, fmt.Errorf("read which Ray-door tasks name package %s: %w", name, err)
		}
		return inUse[name], nil
	})
	if err != nil {
		return err
	}
	if !ok {
		return mvp.Errorf(mvp.CodeNotFound, "", "Package %s://%s does not exist", shown(r.PathValue("protocol")),
			shown(r.PathValue("name")))
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (d *Door) putPackage(w http.ResponseWriter, r *http.Request) error {
	if _, err := d.Packages.path(r.PathValue("protocol"), r.PathValue("name")); err != nil {
		return err
	}
	// A package is held whole while it is read, sealed and written (up to 100 MiB): a few uploads at a time,
	// the others wait their turn (Ray's client waits for its answer), so that a burst of `ray job submit
	// --working-dir` cannot take the service's memory.
	if r.ContentLength > MaxPackageBytes { // refused before it takes a place
		return mvp.Errorf(mvp.CodeTooLarge, "", "the package is larger than %d bytes (Ray's own limit)", MaxPackageBytes)
	}
	// The wait for a place is bounded: uploads that hold theirs end within their own time (below), but a client
	// is told rather than left waiting behind a burst.
	wait := time.NewTimer(uploadSlotWait)
	defer wait.Stop()
	select {
	case uploads <- struct{}{}:
		defer func() { <-uploads }()
	case <-wait.C:
		return mvp.Errorf(mvp.CodeUnavailable, "", "the Ray door was reading %d other package uploads for %s (it "+
			"reads %d at a time, each held whole): submit the job again in a while", MaxUploads, uploadSlotWait, MaxUploads)
	case <-r.Context().Done():
		return r.Context().Err()
	}
	// The server gives a whole request a minute (its ReadTimeout), which a package of up to 100 MiB outlasts on a
	// slow link: an upload is given the time it takes while its bytes keep coming, up to what its size takes at
	// minUploadRate. Without that bound, bytes trickling in one at a time held a place for as long as they came.
	size := r.ContentLength
	if size <= 0 {
		size = MaxPackageBytes
	}
	given := uploadStall + time.Duration(float64(size)/float64(minUploadRate)*float64(time.Second))
	body := &stallReader{r: http.MaxBytesReader(w, r.Body, MaxPackageBytes), rc: http.NewResponseController(w),
		stall: uploadStall, end: time.Now().Add(given)}
	data, err := io.ReadAll(body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return mvp.Errorf(mvp.CodeTooLarge, "", "the package is larger than %d bytes (Ray's own limit)", MaxPackageBytes)
		}
		if errors.Is(err, errUploadTooSlow) {
			of := fmt.Sprintf("its %d bytes", size)
			if r.ContentLength <= 0 {
				of = fmt.Sprintf("a package of unknown size (no Content-Length: the most, %d bytes)", size)
			}
			return mvp.Errorf(mvp.CodeInvalid, "", "the package upload was given %s for %s (at least %d KiB/s "+
				"after the first %s) and had sent %d bytes: submit the job again from a faster link, or with a smaller "+
				"working_dir", given.Round(time.Second), of, minUploadRate>>10, uploadStall, len(data))
		}
		return mvp.Errorf(mvp.CodeInvalid, "", "reading the package failed: %v", err)
	}
	if len(data) == 0 {
		return mvp.Errorf(mvp.CodeInvalid, "", "the package is empty")
	}
	if err := d.Packages.Put(r.PathValue("protocol"), r.PathValue("name"), data); err != nil {
		return err
	}
	d.Logger.Info("ray package kept", "package", r.PathValue("name"), "bytes", len(data))
	w.WriteHeader(http.StatusOK)
	return nil
}

// ErrLogLost marks CopyLogFrom's error for an ended attempt whose Ray job is gone: what it wrote is the copy mvp made
// while the job ran, and the rest of the log is lost. The logs answer gives the copy; a tail that has sent lines
// is dropped, as for a log cut short, so that Ray's client does not take them for the whole.
var ErrLogLost = errors.New("the rest of the log went with its Ray job")

// uploads holds a place for each package upload being read and kept (MaxUploads at once).
var uploads = make(chan struct{}, MaxUploads)

// MaxUploads is how many package uploads the door reads and keeps at once; each holds its package whole.
const MaxUploads = 2

// uploadStall is how long a package upload may go without a byte arriving before it is given up (a variable for
// tests).
var uploadStall = time.Minute

// minUploadRate is the least average rate, in bytes per second, an upload is given its time by: its size (its
// Content-Length, else MaxPackageBytes) at this rate, plus uploadStall. 100 MiB takes 27 minutes at 64 KiB/s.
var minUploadRate int64 = 64 << 10

// uploadSlotWait is how long an upload waits for one of the MaxUploads places before it is refused (503).
var uploadSlotWait = 2 * time.Minute

// errUploadTooSlow ends the read of an upload past its time.
var errUploadTooSlow = errors.New("the upload was slower than the least rate")

// stallReader reads r, moving the connection's read deadline to stall from now before each read: a request may
// then take as long as its bytes keep coming, whatever the server's ReadTimeout.
type stallReader struct {
	r     io.Reader
	rc    *http.ResponseController
	stall time.Duration
	end   time.Time // the whole upload's time: no read past it
}

func (s *stallReader) Read(p []byte) (int, error) {
	now := time.Now()
	if !now.Before(s.end) {
		return 0, errUploadTooSlow
	}
	dl := now.Add(s.stall)
	if dl.After(s.end) {
		dl = s.end
	}
	_ = s.rc.SetReadDeadline(dl) // not every connection has deadlines; the read goes on
	n, err := s.r.Read(p)
	if err != nil && !time.Now().Before(s.end) && errors.Is(err, os.ErrDeadlineExceeded) {
		err = errUploadTooSlow
	}
	return n, err
}

// jobDetails is Ray's JobDetails as its client validates it: status in upper case, times in integer
// milliseconds, driver_info's fields strings.
type jobDetails struct {
	Type                   string            `json:"type"`
	JobID                  *string           `json:"job_id"`
	SubmissionID           string            `json:"submission_id"`
	DriverInfo             *driverInfo       `json:"driver_info"`
	Status                 mvp.RayStatus     `json:"status"`
	Entrypoint             string            `json:"entrypoint"`
	Message                string            `json:"message"`
	ErrorType              *string           `json:"error_type"`
	StartTime              *int64            `json:"start_time"`
	EndTime                *int64            `json:"end_time"`
	Metadata               map[string]string `json:"metadata"`
	RuntimeEnv             map[string]any    `json:"runtime_env"`
	DriverAgentHTTPAddress *string           `json:"driver_agent_http_address"`
	DriverNodeID           *string           `json:"driver_node_id"`
	DriverExitCode         *int              `json:"driver_exit_code"`
}

type driverInfo struct {
	ID            string `json:"id"`
	NodeIPAddress string `json:"node_ip_address"`
	PID           string `json:"pid"`
}

// stoppedWhileQueued reports whether t was canceled while it waited in mvp again after an attempt that ended
// (failed, and queued again): its latest attempt ended before the cancel, and not by a stop.
func stoppedWhileQueued(t *mvp.Task) bool {
	a := t.Latest()
	return t.State == mvp.StateCanceled && a != nil && a.RayStatus.Terminal() && a.RayStatus != mvp.RayStopped &&
		a.EndTime != nil && a.EndTime.Before(t.UpdatedAt)
}

// ended reports whether the door shows t as ended: its task has ended, and a canceled one's attempt too (until
// then its driver may still run, and the door shows it as it is).
func ended(t *mvp.Task) bool {
	if !t.State.Terminal() {
		return false
	}
	a := t.Latest()
	return t.State != mvp.StateCanceled || a == nil || a.RayStatus.Terminal()
}

// rayStatus is the Ray status the door shows for an mvp state: every waiting state is PENDING, a canceled
// task STOPPED (once its attempt has ended: details).
func rayStatus(s mvp.State) mvp.RayStatus {
	switch s {
	case mvp.StateRunning:
		return mvp.RayRunning
	case mvp.StateSucceeded:
		return mvp.RaySucceeded
	case mvp.StateFailed:
		return mvp.RayFailed
	case mvp.StateCanceled:
		return mvp.RayStopped
	default:
		return mvp.RayPending
	}
}

// details is a task as Ray's JobDetails: a ray_job's own request, a jobspec task's built entrypoint, the status
// derived from mvp's state with a message that says why a waiting task waits.
func (d *Door) details(t *mvp.Task) jobDetails {
	j := jobDetails{Type: "SUBMISSION", SubmissionID: t.SubmissionID, Status: rayStatus(t.State),
		Metadata: map[string]string{}, RuntimeEnv: map[string]any{}}
	if j.SubmissionID == "" {
		j.SubmissionID = t.ID
	}
	var req mvp.RayJobRequest
	if info, _ := t.Workload.Info(); info.RayDoor && json.Unmarshal(t.SpecJSON, &req) == nil {
		j.Entrypoint = req.Entrypoint
		if req.Metadata != nil {
			j.Metadata = req.Metadata
		}
		if req.RuntimeEnv != nil {
			j.RuntimeEnv = req.RuntimeEnv
		}
	} else if d.Build != nil {
		if s, err := d.Build(t, max(t.LatestAttemptNo, 1)); err == nil {
			j.Entrypoint = s.Entrypoint
		}
	}
	j.Metadata[mvp.MetaDoorTaskID] = t.ID
	created := t.CreatedAt.UnixMilli()
	j.StartTime = &created
	a := t.Latest()
	// A job queued in mvp again (its attempt lost the race for GPUs) is PENDING, as a job Ray has not started:
	// Ray shows no driver for that, so the failed attempt's job id, node and exit code are not shown either; nor
	// once it is stopped while it so waits (its end is the stop's, not the failed attempt's).
	stoppedQueued := stoppedWhileQueued(t)
	if a != nil && !t.State.Waiting() && !stoppedQueued {
		if a.RayJobID != "" {
			j.JobID = &a.RayJobID
		}
		if a.DriverNodeID != "" {
			j.DriverNodeID = &a.DriverNodeID
		}
		j.DriverExitCode = a.ExitCode
	}
	// Canceled while its job runs: Ray's own server says STOPPED once the driver has stopped, and `ray job stop`
	// waits for that; until the attempt has ended the job is shown as it is.
	if t.State.Terminal() && !ended(t) {
		j.Status = mvp.RayPending
		if a.RayStatus == mvp.RayRunning {
			j.Status = mvp.RayRunning
		}
		j.Message = fmt.Sprintf("stopping: canceled in mvp; attempt %d is being stopped in Ray", a.No)
		return j
	}
	if t.State.Terminal() {
		end := t.UpdatedAt.UnixMilli()
		if a != nil && a.EndTime != nil && !t.Expired() && !stoppedQueued { // an expiry ends the task after its attempt's end
			end = a.EndTime.UnixMilli()
		}
		j.EndTime = &end
	}
	if d.Health != nil && (t.State.Waiting() || t.State == mvp.StateSubmitting || t.State == mvp.StateSubmitted) {
		if h := d.Health(); !h.RayOK && h.RayDownSince != nil {
			since := h.RayDownSince.UTC().Format(time.RFC3339)
			if t.State.Waiting() {
				j.Message = fmt.Sprintf("queued in mvp: Ray's cluster cannot be read since %s (%s); nothing is "+
					"admitted until it can", since, h.RayError)
			} else {
				j.Message = fmt.Sprintf("admitted by mvp; attempt %d submitted to Ray, whose cluster cannot be read since "+
					"%s (%s): mvp follows it again once Ray answers (a job Ray lost meanwhile is retried)",
					t.LatestAttemptNo, since, h.RayError)
			}
			return j
		}
	}
	switch t.State {
	case mvp.StateQueued:
		j.Message = "queued in mvp: " + scheduler.NextLook
	case mvp.StatePendingResources:
		j.Message = "queued in mvp: " + t.PendingReason
		if t.NextRunAt != nil {
			j.Message += fmt.Sprintf(" (looked at again at %s)", t.NextRunAt.UTC().Format(time.RFC3339))
		}
	case mvp.StateSubmitting, mvp.StateSubmitted:
		j.Message = fmt.Sprintf("admitted by mvp; attempt %d submitted to Ray, waiting for its driver to start", t.LatestAttemptNo)
	case mvp.StateRunning:
		j.Message = fmt.Sprintf("running (attempt %d)", t.LatestAttemptNo)
	case mvp.StateSucceeded:
		j.Message = "Job finished successfully."
	case mvp.StateFailed:
		j.Message = t.ErrorSummary
		if t.Expired() {
			kind := string(mvp.FailureMaxQueuedExceeded)
			j.ErrorType = &kind
		} else if a != nil && a.FailureKind != mvp.FailureNone {
			kind := string(a.FailureKind)
			j.ErrorType = &kind
		}
	case mvp.StateCanceled:
		j.Message = "Job was intentionally stopped (canceled in mvp)."
	}
	return j
}

// tail streams the driver log of the task's latest attempt over a WebSocket: text frames of whole lines, then a
// normal close once the task has ended and its log is drained. A requeued task's next attempt starts its log
// afresh in the stream.
func (d *Door) tail(w http.ResponseWriter, r *http.Request) error {
	t, err := d.find(r)
	if err != nil {
		return err
	}
	return d.streamLog(w, r, t)
}

// lines returns the longest prefix of s made of whole lines, at most max bytes unless a single line is longer:
// then as much of it as fits, cut between characters (a text frame must be valid UTF-8). A line ends with '\n' or
// with '\r': a progress bar (tqdm) redraws its line with '\r' and writes '\n' only when it is done, and Ray's own
// tail shows each redraw as it comes (it reads the file with Python's universal newlines).
func lines(s string, max int) string {
	if len(s) > max {
		if i := strings.LastIndexAny(s[:max], "\n\r"); i >= 0 {
			return s[:i+1]
		}
		if p := mvp.PrefixUTF8(s, max); p != "" {
			return p
		}
		_, n := utf8.DecodeRuneInString(s) // one character longer than max
		return s[:n]
	}
	if i := strings.LastIndexAny(s, "\n\r"); i >= 0 {
		return s[:i+1]
	}
	return ""
}

// notStringMetadata returns the first key (in sorted order) of the request's metadata whose value is not a JSON
// string, or "" when there is none (or no metadata object to read).
func notStringMetadata(body []byte) string {
	var doc struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(doc.Metadata)) {
		if v := bytes.TrimSpace(doc.Metadata[k]); len(v) == 0 || v[0] != '"' {
			return k
		}
	}
	return ""
}
