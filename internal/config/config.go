// Package config reads the cluster's shared dev.yaml: the Ray settings that other tools use too, and the v2:
// section that belongs to mvp. Keys outside v2: that mvp does not use are ignored (one named as a v2 section is
// warned of, in Config.Warnings); an unknown key under v2: is an error that names the key and its line.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/mvp2/mvp/internal/jobspec"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/recurring"
	"github.com/mvp2/mvp/internal/scheduler"
)

// Config is the whole of dev.yaml as mvp reads it.
type Config struct {
	// Address is the Ray Job server (dashboard) URL, e.g. http://127.0.0.1:8265.
	Address string `yaml:"address"`
	// SharedRoot is the shared filesystem root (NFS /private in production); task folders live under
	// <shared_root>/jobs/.
	SharedRoot          string             `yaml:"shared_root"`
	EntrypointNumCPUs   float64            `yaml:"entrypoint_num_cpus"`
	EntrypointResources map[string]float64 `yaml:"entrypoint_resources"`
	RuntimeEnv          map[string]any     `yaml:"runtime_env"`
	UserCodePath        string             `yaml:"user_code_path"`
	V2                  V2                 `yaml:"v2"`
	// Warnings are what Parse found worth saying and not refusing (a top-level key named as one of v2's sections,
	// which mvp does not read there): mvp serve logs them at start, mvp doctor prints them.
	Warnings []string `yaml:"-"`
}

// V2 is mvp's own section.
type V2 struct {
	API       API                       `yaml:"api"`
	Auth      Auth                      `yaml:"auth"`
	SQLite    SQLite                    `yaml:"sqlite"`
	Scheduler Scheduler                 `yaml:"scheduler"`
	Ray       Ray                       `yaml:"ray"`
	Workloads map[string]WorkloadConfig `yaml:"workloads"`
	Metrics   Metrics                   `yaml:"metrics"`
	Secrets   Secrets                   `yaml:"secrets"`
}

// Secrets names the environment variable holding the key that encrypts stored secrets at rest (AES-256-GCM: 32
// bytes, as 64 hex digits or base64). Without a key in it, secret storage is off: storing a secret and submitting
// a jobspec that names secrets are refused with a message naming the setting.
type Secrets struct {
	KeyEnv string `yaml:"key_env"`
}

// Metrics configures the Prometheus metrics at /metrics (specs/metrics.md lists them).
type Metrics struct {
	// Enabled serves /metrics and collects them; default true.
	Enabled *bool `yaml:"enabled"`
	// Public lets /metrics be read without the API token (e.g. by a Prometheus on a trusted network).
	Public bool `yaml:"public"`
}

// On reports whether the metrics are enabled.
func (m Metrics) On() bool { return m.Enabled == nil || *m.Enabled }

// API is where the HTTP API listens.
type API struct {
	Host string `yaml:"host"`
	Port int    `yaml:"port"`
	// MaxBodyBytes caps a request body.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
}

// Auth names the environment variable holding the internal (operator's) bearer token, and the named users.
type Auth struct {
	TokenEnv string `yaml:"token_env"`
	// Users are the named users, each with its own token (in the environment variable TokenEnv names) and
	// optional limits; see specs/config.md.
	Users []User `yaml:"users"`
}

// SecretEnvs returns the names of the environment variables the config has mvp read its own secrets from: the
// operator's token (v2.auth.token_env), each user's (v2.auth.users[].token_env) and the secrets key
// (v2.secrets.key_env), each once, in that order. Ray's token (v2.ray.token_env) is not among them, even where
// one of those variables is also Ray's token's: Ray's nodes need it.
func (c *Config) SecretEnvs() []string {
	names := []string{c.V2.Auth.TokenEnv}
	for _, u := range c.V2.Auth.Users {
		names = append(names, u.TokenEnv)
	}
	var out []string
	for _, n := range append(names, c.V2.Secrets.KeyEnv) {
		if n != "" && n != c.V2.Ray.TokenEnv && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// User is one named user: its token's environment variable and optional limits (0 or absent: none).
type User struct {
	Name     string `yaml:"name"`
	TokenEnv string `yaml:"token_env"`
	MaxGPUs  int    `yaml:"max_gpus"`
	// MaxQueued bounds the user's waiting tasks.
	MaxQueued int `yaml:"max_queued"`
	// MaxPriority caps the jobspec priority the user may ask for; absent: 100.
	MaxPriority *int `yaml:"max_priority"`
	// Share is the user's weight in fair share, above 0; absent: 1.
	Share float64 `yaml:"share"`
}

// SQLite is where the queue lives.
type SQLite struct {
	DBPath string `yaml:"db_path"`
	// CheckpointSchedule is when the WAL is checkpointed and truncated: a 5-field cron line or a descriptor such
	// as "@every 10m"; "off" turns it off (SQLite's own automatic checkpoints still run).
	CheckpointSchedule string `yaml:"checkpoint_schedule"`
}

// Scheduler tunes the scheduling loop. Durations are in seconds.
type Scheduler struct {
	TickS           float64 `yaml:"tick_s"`
	RetryIntervalS  float64 `yaml:"retry_interval_s"`
	MaxRunningTasks int     `yaml:"max_running_tasks"`
	GangWaitS       float64 `yaml:"gang_wait_s"`
	MaxInfraRetries int     `yaml:"max_infra_retries"`
	// MaxResourceRetries bounds the requeues of a task whose attempts failed for lack of resources.
	MaxResourceRetries int `yaml:"max_resource_retries"`
	// Policy names the queue policy (scheduler.PolicyNames lists them); left out it is "", which is
	// scheduler.DefaultPolicy (written empty in the file, it is refused).
	Policy string `yaml:"policy"`
	// DefaultMaxRuntimeS is a task's max_runtime_s when its jobspec gives none; MaxRuntimeCapS caps what a
	// jobspec may ask for.
	DefaultMaxRuntimeS int `yaml:"default_max_runtime_s"`
	MaxRuntimeCapS     int `yaml:"max_runtime_cap_s"`
	// DefaultMaxQueuedS is a task's max_queued_s when its jobspec gives none; MaxQueuedCapS caps it.
	DefaultMaxQueuedS int `yaml:"default_max_queued_s"`
	MaxQueuedCapS     int `yaml:"max_queued_cap_s"`
	// RuntimeGraceS is how long a job that overstayed max_runtime_s gets between Ray's SIGTERM and SIGKILL.
	RuntimeGraceS float64 `yaml:"runtime_grace_s"`
	// FairShare ranks competing users' tasks of one priority by recent usage relative to share; default true.
	FairShare *bool `yaml:"fair_share"`
	// FairShareHalfLifeS is the half-life of the decayed GPU-seconds usage fair share ranks by.
	FairShareHalfLifeS float64 `yaml:"fair_share_half_life_s"`
	// StarvationS: a task that has waited this long is ranked before every task that has not, so no priority and
	// no fair share can overtake it or its reservation.
	StarvationS float64 `yaml:"starvation_s"`
}

// MinShare and MaxShare bound a user's share (v2.auth.users[].share): fair share divides usage by it.
const (
	MinShare = 0.001
	MaxShare = 1e6
)

// FairShareOn reports whether fair share is on.
func (s Scheduler) FairShareOn() bool { return s.FairShare == nil || *s.FairShare }

// HalfLife is fair share's half-life.
func (s Scheduler) HalfLife() time.Duration { return seconds(s.FairShareHalfLifeS) }

// StarvationBound is the wait past which no priority or fair share overtakes a task.
func (s Scheduler) StarvationBound() time.Duration { return seconds(s.StarvationS) }

// Ray tells mvp how to reach Ray beyond the Job server address.
type Ray struct {
	// GCSAddress is host:port of the GCS, for the live probe. Default: the Job server's host and port 6379.
	GCSAddress string `yaml:"gcs_address"`
	// Python is Ray's Python, which runs the probe. Default python3.
	Python string `yaml:"python"`
	// ProbeScript is the path of py-entrypoints/mvp_probe.py.
	ProbeScript string `yaml:"probe_script"`
	// TokenEnv names the environment variable with Ray's auth token (RAY_AUTH_MODE=token clusters).
	TokenEnv string `yaml:"token_env"`
	// KeepFinishedJobs is how many finished mvp jobs stay in Ray's job server.
	KeepFinishedJobs int `yaml:"keep_finished_jobs"`
	// RequestTimeoutS bounds one Ray REST call.
	RequestTimeoutS float64 `yaml:"request_timeout_s"`
	// LogCopyS is how often a running attempt's driver log is copied into the task folder.
	LogCopyS float64 `yaml:"log_copy_s"`
	// PackageRetentionS is how long a package uploaded through the Ray door is kept once nothing uses it: no task
	// still to run names it, and no client asked for it, uploaded it or named it in a submission.
	PackageRetentionS float64 `yaml:"package_retention_s"`
	// MaxLogStreams bounds the driver-log streams mvp holds open on Ray's state API at once (log follows: mvp logs
	// -f, the web page's, the Ray door's tails); followers past it read the log by copies. 0 (the default): no
	// streams, every follower reads by copies. Ray 2.60 holds one of its state API's places (it serves
	// RAY_STATE_SERVER_MAX_HTTP_REQUEST requests at once, 100 by default, and refuses the rest: mvp's log copies
	// among them) for every stream whose log stops growing, for good: each followed attempt that ends leaks one.
	MaxLogStreams int `yaml:"max_log_streams"`
}

// WorkloadConfig is per-workload admission shape; the defaults are mvp.WorkloadTable's.
type WorkloadConfig struct {
	// CPUsPerGPU is the CPU of one verl bundle {"CPU": c, "GPU": 1}.
	CPUsPerGPU float64 `yaml:"cpus_per_gpu"`
	// RunnerCPUs is the CPU of the actor the driver starts first (verl's TaskRunner), counted with the driver.
	RunnerCPUs float64 `yaml:"runner_cpus"`
}

// Defaults, documented in specs/config.md.
const (
	DefaultAPIHost         = "127.0.0.1"
	DefaultAPIPort         = 8080
	DefaultMaxBodyBytes    = 1 << 20
	DefaultTokenEnv        = "MVP_INTERNAL_TOKEN"
	DefaultSecretsKeyEnv   = "MVP_SECRETS_KEY"
	DefaultDBPath          = "/private/common/db/mvp_v2.sqlite3"
	DefaultCheckpoint      = "@every 10m"
	DefaultTickS           = 2.0
	DefaultRetryIntervalS  = 60.0
	DefaultMaxRunningTasks = 16
	DefaultGangWaitS       = 120.0
	DefaultMaxInfraRetries = 3
	// DefaultMaxResourceRetries is generous: a busy cluster may turn a gang away many times before it fits. With
	// max_infra_retries it must leave attempt numbers within the task folder's range (999).
	DefaultMaxResourceRetries = 100
	DefaultMaxRuntimeS        = 3 * 24 * 3600  // 3 days: a long verl run
	DefaultMaxRuntimeCapS     = 30 * 24 * 3600 // 30 days
	// MaxDurationS is the longest duration any key takes: ten years (the clock's arithmetic holds 292).
	MaxDurationS         = 10 * 365 * 24 * 3600
	DefaultMaxQueuedS    = 7 * 24 * 3600 // a week
	DefaultMaxQueuedCapS = 30 * 24 * 3600
	DefaultRuntimeGraceS = 30.0
	// DefaultFairShareHalfLifeS is fair share's half-life (7 days, Slurm's PriorityDecayHalfLife default; `make sim`
	// measured the steady team's wait shortest with it, BENCHMARKS.md); DefaultStarvationS the starvation bound.
	DefaultFairShareHalfLifeS = 7 * 86400.0
	DefaultStarvationS        = 86400.0
	// MaxAttempts is the largest attempt number a task folder holds (attempts/a01 … a999).
	MaxAttempts             = 999
	DefaultRayTokenEnv      = "RAY_AUTH_TOKEN"
	DefaultKeepFinishedJobs = 100
	// DefaultMaxLogStreams is no log streams from Ray (Ray.MaxLogStreams says why); MaxLogStreamsCap is the most
	// requests Ray's state API may be set to serve at once (RAY_STATE_SERVER_MAX_HTTP_REQUEST_ALLOWED).
	DefaultMaxLogStreams   = 0
	MaxLogStreamsCap       = 1000
	DefaultRequestTimeoutS = 10.0
	// DefaultPackageRetentionS keeps an unused Ray-door package a week; MinPackageRetentionS is Ray's own
	// temporary reference (RAY_RUNTIME_ENV_TEMPORARY_REFERENCE_EXPIRATION_S): a client checks that a package is
	// kept, then submits the job naming it, and it must not go in between.
	DefaultPackageRetentionS = 7 * 86400.0
	MinPackageRetentionS     = 600.0
	DefaultAddress           = "http://127.0.0.1:8265"
	DefaultSharedRoot        = "/private"
)

// Load reads and validates the file at path.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w (name the cluster's dev.yaml with --config FILE)", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse reads a dev.yaml document, applies defaults and validates it.
func Parse(b []byte) (*Config, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			root = yaml.Node{}
		} else {
			return nil, fmt.Errorf("parse yaml: %s", jobspec.YAMLProblem(b, err))
		}
	}
	var c Config
	present := map[string]bool{} // the keys the file gives a value (dotted paths): a 0 there is not "unset"
	lines := map[string]int{}    // the line of each key the file gives a value other than a mapping
	if root.Kind != 0 {
		noteLines(&root, "", lines)
		doc := &root
		if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
			doc = doc.Content[0]
		}
		if doc.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("line %d: the top of the file must be a mapping", doc.Line)
		}
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if !isNull(doc.Content[i+1]) {
				present[doc.Content[i].Value] = true
			}
			if doc.Content[i].Value == "v2" {
				if err := checkKnown(doc.Content[i+1], reflect.TypeOf(V2{}), "v2", present); err != nil {
					return nil, err
				}
			} else if err := checkShared(doc.Content[i], doc.Content[i+1], present); err != nil {
				return nil, err
			} else if k := doc.Content[i]; slices.Contains(v2Sections(), k.Value) {
				// Not refused: the top level is shared with the cluster's other tools, one of which may use the name.
				c.Warnings = append(c.Warnings, fmt.Sprintf("%s (line %d): not read: mvp reads only v2.%s (move the "+
					"section under v2: if it is meant for mvp)", k.Value, k.Line, k.Value))
			}
		}
		if err := doc.Decode(&c); err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
	}
	if err := finite(reflect.ValueOf(c), ""); err != nil {
		return nil, atLine(err, lines)
	}
	if err := c.noEmptyPaths(present); err != nil {
		return nil, atLine(err, lines)
	}
	c.applyDefaults(present)
	if err := c.Validate(); err != nil {
		return nil, atLine(err, lines)
	}
	return &c, nil
}

// v2Sections are the names of v2's sections (api, auth, …), from V2's yaml tags.
func v2Sections() []string {
	var names []string
	t := reflect.TypeOf(V2{})
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// noteLines records in lines the line of every key under n (dotted paths, list items as [i]) whose value is not a
// mapping: the keys a value error may name.
func noteLines(n *yaml.Node, path string, lines map[string]int) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			noteLines(c, path, lines)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := k.Value
			if path != "" {
				key = path + "." + k.Value
			}
			if v.Kind != yaml.MappingNode {
				lines[key] = k.Line
			}
			noteLines(v, key, lines)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			noteLines(item, fmt.Sprintf("%s[%d]", path, i), lines)
		}
	}
}

// lineError is a value error with the line of the key it names.
type lineError struct {
	msg string
	err error
}

func (e *lineError) Error() string { return e.msg }
func (e *lineError) Unwrap() error { return e.err }

// atLine adds the line to an error that begins with a key the file gives ("key: …" becomes "key (line N): …", as
// an unknown key's and a wrong kind's errors read); an error about a default or a derived value is left as it is.
func atLine(err error, lines map[string]int) error {
	msg, best := err.Error(), ""
	for k := range lines {
		if len(k) > len(best) && strings.HasPrefix(msg, k+":") {
			best = k
		}
	}
	if best == "" {
		return err
	}
	return &lineError{msg: fmt.Sprintf("%s (line %d)%s", best, lines[best], msg[len(best):]), err: err}
}

// checkShared refuses a value of the wrong kind for a top-level key mvp reads, naming the key; a key it does not
// know is another tool's and is left alone.
func checkShared(k, v *yaml.Node, present map[string]bool) error {
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != k.Value || name == "-" {
			continue // "-": no key (Warnings)
		}
		if !isNull(v) {
			if err := checkScalar(v, t.Field(i).Type, k.Value); err != nil {
				return err
			}
		}
		return checkKnown(v, t.Field(i).Type, k.Value, present)
	}
	return nil
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// checkScalar refuses a value of the wrong kind for a number, a switch, a text, a mapping or a list, naming the
// key (the decoder's own error names only the line).
func checkScalar(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var want, tag string
	var ok bool
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		want, tag = "a whole number", "!!int"
	case reflect.Float64:
		want, tag = "a number", "!!float"
	case reflect.Bool:
		want, tag = "true or false", "!!bool"
	case reflect.String:
		want, ok = "text", n.Kind == yaml.ScalarNode
	case reflect.Map, reflect.Struct:
		want, ok = "a mapping", n.Kind == yaml.MappingNode
	case reflect.Slice:
		want, ok = "a list", n.Kind == yaml.SequenceNode
	default:
		return nil
	}
	if tag != "" {
		ok = n.Kind == yaml.ScalarNode && (n.Tag == tag || (tag == "!!float" && n.Tag == "!!int"))
	}
	if !ok {
		got := n.Value
		if n.Kind != yaml.ScalarNode {
			got = "a " + map[yaml.Kind]string{yaml.MappingNode: "mapping", yaml.SequenceNode: "list"}[n.Kind]
		}
		return fmt.Errorf("%s (line %d): must be %s, got %q", path, n.Line, want, mvpClip(got))
	}
	return nil
}

func mvpClip(s string) string { return mvp.Clip(s, 40) }

// finite reports the first number in v (a Config, walked by its yaml names) that is NaN or infinite: such a value
// passes every range check, since a NaN compares false.
func finite(v reflect.Value, path string) error {
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s: %v is not a finite number; give a number of the documented range (specs/config.md)", path, f)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return finite(v.Elem(), path)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			if err := finite(v.Field(i), join(name)); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if err := finite(iter.Value(), join(fmt.Sprint(iter.Key().Interface()))); err != nil {
				return err
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if err := finite(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkKnown walks a mapping node against a struct type's yaml tags and reports the first unknown key; it notes
// in present the dotted path of every key given a value.
func checkKnown(n *yaml.Node, t reflect.Type, path string, present map[string]bool) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
				return nil
			}
			return fmt.Errorf("%s (line %d): must be a mapping", path, n.Line)
		}
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name != "" && name != "-" {
				fields[name] = f.Type
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fields[k.Value]
			if !ok {
				return fmt.Errorf("%s.%s (line %d): unknown key; known keys under %s are %s",
					path, k.Value, k.Line, path, strings.Join(sortedKeys(fields), ", "))
			}
			if !isNull(n.Content[i+1]) {
				present[path+"."+k.Value] = true
				if err := checkScalar(n.Content[i+1], ft, path+"."+k.Value); err != nil {
					return err
				}
			}
			if err := checkKnown(n.Content[i+1], ft, path+"."+k.Value, present); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, item := range n.Content {
			if err := checkKnown(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), present); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := path + "." + n.Content[i].Value
			if !isNull(n.Content[i+1]) {
				if err := checkScalar(n.Content[i+1], t.Elem(), key); err != nil {
					return err
				}
			}
			if err := checkKnown(n.Content[i+1], t.Elem(), key, present); err != nil {
				return err
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]reflect.Type) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// emptyHint says what an empty value may have been meant as, where that has a way of its own.
var emptyHint = map[string]string{
	"v2.secrets.key_env":            "; to keep secret storage off, leave the variable it names unset or empty",
	"v2.sqlite.checkpoint_schedule": "; to turn the checkpoints off, write \"off\"",
	"v2.scheduler.policy": "; the policies are " + strings.Join(scheduler.PolicyNames, ", ") + " (the default is " +
		scheduler.DefaultPolicy + ")",
}

// noEmptyPaths refuses a path or address the file gives as empty text (v2.api.host too: empty is not "every
// interface" here, 0.0.0.0 is): taken for the default, it made mvp's
// folders and database where the operator did not mean them (/private/…). So too an empty variable name (an
// empty v2.secrets.key_env read $MVP_SECRETS_KEY) and an empty checkpoint schedule (it checkpointed every 10
// minutes; "off" turns them off), and an empty policy (it meant the default policy unsaid). Left out, or null, a key
// takes its default.
func (c *Config) noEmptyPaths(present map[string]bool) error {
	for _, k := range []struct {
		path, value string
	}{
		{"address", c.Address}, {"shared_root", c.SharedRoot}, {"v2.sqlite.db_path", c.V2.SQLite.DBPath},
		{"v2.ray.python", c.V2.Ray.Python}, {"v2.ray.probe_script", c.V2.Ray.ProbeScript},
		{"v2.ray.gcs_address", c.V2.Ray.GCSAddress}, {"v2.api.host", c.V2.API.Host},
		{"v2.auth.token_env", c.V2.Auth.TokenEnv}, {"v2.ray.token_env", c.V2.Ray.TokenEnv},
		{"v2.secrets.key_env", c.V2.Secrets.KeyEnv}, {"v2.sqlite.checkpoint_schedule", c.V2.SQLite.CheckpointSchedule},
		{"v2.scheduler.policy", c.V2.Scheduler.Policy},
	} {
		if present[k.path] && strings.TrimSpace(k.value) == "" {
			return fmt.Errorf("%s: is empty; give it a value, or leave the key out for its default (specs/config.md)%s",
				k.path, emptyHint[k.path])
		}
	}
	return nil
}

// applyDefaults fills in what the file leaves out (present: the keys it gives, as Parse noted them). A number the
// file gives is kept, 0 included: where 0 means something (no retries, port 0 for a free port) it is honoured, and
// where it does not, Validate refuses it.
func (c *Config) applyDefaults(present map[string]bool) {
	absent := func(path string) bool { return !present[path] }
	if c.Address == "" {
		c.Address = DefaultAddress
	}
	if c.SharedRoot == "" {
		c.SharedRoot = DefaultSharedRoot
	}
	if len(c.EntrypointResources) == 0 {
		c.EntrypointResources = map[string]float64{"worker_node": 1}
	}
	v := &c.V2
	if v.API.Host == "" {
		v.API.Host = DefaultAPIHost
	}
	if absent("v2.api.port") {
		v.API.Port = DefaultAPIPort
	}
	if absent("v2.api.max_body_bytes") {
		v.API.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if v.Auth.TokenEnv == "" {
		v.Auth.TokenEnv = DefaultTokenEnv
	}
	if v.Secrets.KeyEnv == "" {
		v.Secrets.KeyEnv = DefaultSecretsKeyEnv
	}
	if v.SQLite.DBPath == "" {
		v.SQLite.DBPath = DefaultDBPath
	}
	if v.SQLite.CheckpointSchedule == "" {
		v.SQLite.CheckpointSchedule = DefaultCheckpoint
	}
	s := &v.Scheduler
	if absent("v2.scheduler.tick_s") {
		s.TickS = DefaultTickS
	}
	if absent("v2.scheduler.retry_interval_s") {
		s.RetryIntervalS = DefaultRetryIntervalS
	}
	if absent("v2.scheduler.max_running_tasks") {
		s.MaxRunningTasks = DefaultMaxRunningTasks
	}
	if absent("v2.scheduler.gang_wait_s") {
		s.GangWaitS = DefaultGangWaitS
	}
	if absent("v2.scheduler.max_infra_retries") {
		s.MaxInfraRetries = DefaultMaxInfraRetries
	}
	if absent("v2.scheduler.max_resource_retries") {
		s.MaxResourceRetries = DefaultMaxResourceRetries
	}
	if absent("v2.scheduler.default_max_runtime_s") {
		s.DefaultMaxRuntimeS = DefaultMaxRuntimeS
	}
	if absent("v2.scheduler.max_runtime_cap_s") {
		s.MaxRuntimeCapS = DefaultMaxRuntimeCapS
	}
	if absent("v2.scheduler.default_max_queued_s") {
		s.DefaultMaxQueuedS = DefaultMaxQueuedS
	}
	if absent("v2.scheduler.max_queued_cap_s") {
		s.MaxQueuedCapS = DefaultMaxQueuedCapS
	}
	if absent("v2.scheduler.runtime_grace_s") {
		s.RuntimeGraceS = DefaultRuntimeGraceS
	}
	if absent("v2.scheduler.fair_share_half_life_s") {
		s.FairShareHalfLifeS = DefaultFairShareHalfLifeS
	}
	if absent("v2.scheduler.starvation_s") {
		s.StarvationS = DefaultStarvationS
	}
	for k := range v.Auth.Users {
		u := &v.Auth.Users[k]
		if absent(fmt.Sprintf("v2.auth.users[%d].share", k)) {
			u.Share = 1 // a 0 given is refused by Validate
		}
		if u.MaxPriority == nil {
			p := mvp.MaxPriority
			u.MaxPriority = &p
		}
	}
	r := &v.Ray
	if r.GCSAddress == "" {
		if u, err := url.Parse(c.Address); err == nil && u.Hostname() != "" {
			r.GCSAddress = net.JoinHostPort(u.Hostname(), "6379")
		}
	}
	if r.Python == "" {
		r.Python = "python3"
	}
	if r.ProbeScript == "" {
		r.ProbeScript = "py-entrypoints/mvp_probe.py"
	}
	if r.TokenEnv == "" {
		r.TokenEnv = DefaultRayTokenEnv
	}
	if absent("v2.ray.keep_finished_jobs") {
		r.KeepFinishedJobs = DefaultKeepFinishedJobs
	}
	if absent("v2.ray.request_timeout_s") {
		r.RequestTimeoutS = DefaultRequestTimeoutS
	}
	if absent("v2.ray.log_copy_s") {
		r.LogCopyS = 30
	}
	if absent("v2.ray.package_retention_s") {
		r.PackageRetentionS = DefaultPackageRetentionS
	}
	if absent("v2.ray.max_log_streams") {
		r.MaxLogStreams = DefaultMaxLogStreams
	}
	if v.Workloads == nil {
		v.Workloads = map[string]WorkloadConfig{}
	}
	for _, info := range mvp.WorkloadTable {
		name := string(info.Name)
		w := v.Workloads[name]
		if absent("v2.workloads." + name + ".cpus_per_gpu") {
			w.CPUsPerGPU = info.CPUsPerGPU
		}
		if absent("v2.workloads." + name + ".runner_cpus") {
			w.RunnerCPUs = info.RunnerCPUs
		}
		v.Workloads[name] = w
	}
}

// Validate checks ranges and shapes after defaults.
func (c *Config) Validate() error {
	u, err := url.Parse(c.Address)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("address: %q is not an http(s) URL of Ray's Job server, e.g. http://127.0.0.1:8265", c.Address)
	}
	if p := u.Port(); p != "" && !validPort(p) {
		// Accepted, every call to Ray failed after start.
		return fmt.Errorf("address: %q: port %s is not a port (1..65535); Ray's Job server listens on 8265 unless "+
			"told otherwise, e.g. http://127.0.0.1:8265", c.Address, p)
	}
	if h, p, err := net.SplitHostPort(c.V2.Ray.GCSAddress); err != nil || h == "" || strings.Contains(h, "/") ||
		!validPort(p) {
		return fmt.Errorf("v2.ray.gcs_address: %q is not host:port of Ray's GCS, e.g. 127.0.0.1:6379 (leave it out for "+
			"address's host and port 6379)", c.V2.Ray.GCSAddress)
	}
	if !strings.HasPrefix(c.SharedRoot, "/") {
		return fmt.Errorf("shared_root: %q must be an absolute path", c.SharedRoot)
	}
	if strings.ContainsAny(c.SharedRoot, "'\"\\") || strings.IndexFunc(c.SharedRoot, unicode.IsControl) >= 0 {
		// Jobs get paths under it as Hydra arguments, quoted where Hydra needs it (workload.hydraPath).
		return fmt.Errorf("shared_root: %q must not contain quotes, backslashes or control characters", c.SharedRoot)
	}
	if c.UserCodePath != "" {
		// It is every task's code_path when the jobspec gives none, and is kept in the task's effective spec as
		// such: a value a jobspec's code_path may not be would be refused at each resubmit of those tasks.
		if err := jobspec.CheckPath("user_code_path", c.UserCodePath); err != nil {
			return err // "user_code_path: …"
		}
	}
	if ev, ok := c.RuntimeEnv["env_vars"]; ok {
		m, isMap := ev.(map[string]any)
		if !isMap {
			return fmt.Errorf("runtime_env.env_vars: must be a mapping of variable names to strings")
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			v := m[k]
			if k == "" || strings.ContainsAny(k, "=\x00") {
				// No process environment can hold it: every driver would fail to start in Ray.
				return fmt.Errorf("runtime_env.env_vars: %q is not a variable name a process can have (it must not be "+
					"empty or hold '=' or a NUL)", mvpClip(k))
			}
			s, isString := v.(string)
			if !isString {
				return fmt.Errorf("runtime_env.env_vars.%s: must be a string (got %v; quote it, e.g. %s: \"1\"): Ray "+
					"takes strings only", mvpClip(k), v, mvpClip(k))
			}
			if strings.ContainsRune(s, 0) {
				return fmt.Errorf("runtime_env.env_vars.%s: the value holds a NUL, which no process environment can "+
					"hold (every driver would fail to start)", mvpClip(k))
			}
		}
	}
	if c.EntrypointNumCPUs < 0 {
		return fmt.Errorf("entrypoint_num_cpus: %s must not be negative", number(c.EntrypointNumCPUs))
	}
	// Every jobspec task's driver asks Ray for these: Ray would take each job and then not start it.
	if err := mvp.CheckDriverResource("entrypoint_num_cpus", c.EntrypointNumCPUs, false); err != nil {
		return fmt.Errorf("entrypoint_num_cpus: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(c.EntrypointResources)) {
		if strings.TrimSpace(k) == "" {
			return fmt.Errorf("entrypoint_resources: %q is not a resource name; name a resource the workers offer, "+
				"e.g. worker_node: 1", k)
		}
		if strings.HasPrefix(k, mvp.DriverLabelPrefix) {
			// mvp would admit the driver by node labels (mvp.DriverLabel) while Ray looked for a resource.
			return fmt.Errorf("entrypoint_resources.%s: a resource name beginning %q is how mvp carries a label "+
				"selector in a driver's demand; name the resource otherwise", mvpClip(k), mvp.DriverLabelPrefix)
		}
		if r := c.EntrypointResources[k]; r < 0 {
			// Every jobspec task's driver asks Ray for it (the Ray door refuses a negative one in a request).
			return fmt.Errorf("entrypoint_resources.%s: %s must not be negative", mvpClip(k), number(r))
		}
		if err := mvp.CheckDriverResource(k, c.EntrypointResources[k], true); err != nil {
			return fmt.Errorf("entrypoint_resources.%s: %w", mvpClip(k), err)
		}
	}
	v := c.V2
	if v.API.Port < 0 || v.API.Port > 65535 {
		return fmt.Errorf("v2.api.port: %d is not a port (0..65535; 0 picks a free one)", v.API.Port)
	}
	// Numbers that must be above zero: leaving one out gives its default.
	for _, p := range []struct {
		key string
		v   float64
		def any
	}{
		{"v2.api.max_body_bytes", float64(v.API.MaxBodyBytes), DefaultMaxBodyBytes},
		{"v2.scheduler.gang_wait_s", v.Scheduler.GangWaitS, DefaultGangWaitS},
		{"v2.scheduler.default_max_runtime_s", float64(v.Scheduler.DefaultMaxRuntimeS), DefaultMaxRuntimeS},
		{"v2.scheduler.max_runtime_cap_s", float64(v.Scheduler.MaxRuntimeCapS), DefaultMaxRuntimeCapS},
		{"v2.scheduler.default_max_queued_s", float64(v.Scheduler.DefaultMaxQueuedS), DefaultMaxQueuedS},
		{"v2.scheduler.max_queued_cap_s", float64(v.Scheduler.MaxQueuedCapS), DefaultMaxQueuedCapS},
		{"v2.scheduler.fair_share_half_life_s", v.Scheduler.FairShareHalfLifeS, DefaultFairShareHalfLifeS},
		{"v2.ray.keep_finished_jobs", float64(v.Ray.KeepFinishedJobs), DefaultKeepFinishedJobs},
		{"v2.ray.request_timeout_s", v.Ray.RequestTimeoutS, DefaultRequestTimeoutS},
		{"v2.ray.log_copy_s", v.Ray.LogCopyS, 30},
	} {
		if p.v <= 0 {
			return fmt.Errorf("%s: %s must be above 0 (leave it out for the default, %v)", p.key, number(p.v), p.def)
		}
	}
	// Durations beyond what mvp's clock arithmetic holds (a time.Duration ends at about 292 years) would wrap.
	for _, d := range []struct {
		key string
		v   float64
	}{
		{"v2.scheduler.retry_interval_s", v.Scheduler.RetryIntervalS},
		{"v2.scheduler.gang_wait_s", v.Scheduler.GangWaitS},
		{"v2.scheduler.default_max_runtime_s", float64(v.Scheduler.DefaultMaxRuntimeS)},
		{"v2.scheduler.max_runtime_cap_s", float64(v.Scheduler.MaxRuntimeCapS)},
		{"v2.scheduler.default_max_queued_s", float64(v.Scheduler.DefaultMaxQueuedS)},
		{"v2.scheduler.max_queued_cap_s", float64(v.Scheduler.MaxQueuedCapS)},
		{"v2.scheduler.runtime_grace_s", v.Scheduler.RuntimeGraceS},
		{"v2.scheduler.fair_share_half_life_s", v.Scheduler.FairShareHalfLifeS},
		{"v2.scheduler.starvation_s", v.Scheduler.StarvationS},
		{"v2.ray.request_timeout_s", v.Ray.RequestTimeoutS},
		{"v2.ray.log_copy_s", v.Ray.LogCopyS},
		{"v2.ray.package_retention_s", v.Ray.PackageRetentionS},
	} {
		if d.v > MaxDurationS {
			return fmt.Errorf("%s: %s s is more than ten years (%d s), the longest duration mvp takes", d.key, number(d.v),
				MaxDurationS)
		}
	}
	if n := v.Ray.MaxLogStreams; n < 0 || n > MaxLogStreamsCap {
		return fmt.Errorf("v2.ray.max_log_streams: %d is not 0..%d (the most requests Ray's state API serves at once, "+
			"RAY_STATE_SERVER_MAX_HTTP_REQUEST_ALLOWED); keep it well below the cluster's RAY_STATE_SERVER_MAX_HTTP_REQUEST "+
			"(100 unless set), or leave it out for the default, %d: no streams", n, MaxLogStreamsCap, DefaultMaxLogStreams)
	}
	if r := v.Ray.PackageRetentionS; r < MinPackageRetentionS {
		return fmt.Errorf("v2.ray.package_retention_s: %s s is too short: a client checks that mvp keeps a package, "+
			"then submits the job that names it, and the package must outlive that (at least %g s, Ray's own "+
			"temporary reference; leave it out for the default, %g s)", number(r), MinPackageRetentionS,
			DefaultPackageRetentionS)
	}
	if cs := v.SQLite.CheckpointSchedule; cs != "off" {
		if _, err := recurring.ParseStandard(cs); err != nil {
			return fmt.Errorf("v2.sqlite.checkpoint_schedule: %q is not a schedule (%v); use a 5-field cron line such as \"*/10 * * * *\", a descriptor such as \"@every 10m\", or \"off\"", cs, err)
		}
		if err := recurring.CheckEvery(cs); err != nil {
			return fmt.Errorf("v2.sqlite.checkpoint_schedule: %q: %v (checkpoints every few minutes are plenty: the default is %q)", cs, err, DefaultCheckpoint)
		}
	}
	s := v.Scheduler
	if !scheduler.ValidPolicy(s.Policy) {
		return fmt.Errorf("v2.scheduler.policy: %q is not a policy; use one of %s", s.Policy,
			strings.Join(scheduler.PolicyNames, ", "))
	}
	if s.TickS < 0.05 || s.TickS > 3600 {
		return fmt.Errorf("v2.scheduler.tick_s: %s must be between 0.05 and 3600 (leave it out for the default, %s)", number(s.TickS), number(DefaultTickS))
	}
	if s.RetryIntervalS < 0 { // gang_wait_s was refused above unless above 0
		return fmt.Errorf("v2.scheduler.retry_interval_s: %s must not be negative (0 retries at once; leave it out "+
			"for the default, %s)", number(s.RetryIntervalS), number(DefaultRetryIntervalS))
	}
	if s.MaxRunningTasks < 0 {
		return fmt.Errorf("v2.scheduler.max_running_tasks: %d must not be negative", s.MaxRunningTasks)
	}
	if s.MaxResourceRetries < 0 || s.MaxInfraRetries < 0 || s.MaxResourceRetries+s.MaxInfraRetries+1 > MaxAttempts {
		return fmt.Errorf("v2.scheduler: max_resource_retries (%d) and max_infra_retries (%d) must not be negative "+
			"and together at most %d (a task folder holds %d attempts)", s.MaxResourceRetries, s.MaxInfraRetries,
			MaxAttempts-1, MaxAttempts)
	}
	if s.DefaultMaxRuntimeS < 0 || s.MaxRuntimeCapS < 0 || s.DefaultMaxRuntimeS > s.MaxRuntimeCapS {
		return fmt.Errorf("v2.scheduler: default_max_runtime_s (%d) must be between 0 and max_runtime_cap_s (%d)",
			s.DefaultMaxRuntimeS, s.MaxRuntimeCapS)
	}
	if s.DefaultMaxQueuedS < 0 || s.MaxQueuedCapS < 0 || s.DefaultMaxQueuedS > s.MaxQueuedCapS {
		return fmt.Errorf("v2.scheduler: default_max_queued_s (%d) must be between 0 and max_queued_cap_s (%d)",
			s.DefaultMaxQueuedS, s.MaxQueuedCapS)
	}
	if s.RuntimeGraceS < 0 {
		return fmt.Errorf("v2.scheduler.runtime_grace_s: %s must not be negative", number(s.RuntimeGraceS))
	}
	for name, w := range v.Workloads {
		if !mvp.Workload(name).Valid() {
			return fmt.Errorf("v2.workloads.%s: unknown workload (%s)", name, mvp.WorkloadNames())
		}
		if w.CPUsPerGPU < 0 {
			return fmt.Errorf("v2.workloads.%s.cpus_per_gpu: must not be negative", name)
		}
		if w.RunnerCPUs < 0 {
			return fmt.Errorf("v2.workloads.%s.runner_cpus: must not be negative", name)
		}
		if info, _ := mvp.Workload(name).Info(); info.RayDoor && w.RunnerCPUs != 0 {
			// A Ray door job's driver takes what its request names (mvp.RayJobRequest.Driver), never the
			// workload's: the value was read and then ignored.
			return fmt.Errorf("v2.workloads.%s.runner_cpus: %s is not used: a Ray job's driver takes what its request "+
				"names (entrypoint_num_cpus, entrypoint_resources); leave the key out", name, number(w.RunnerCPUs))
		}
	}
	if err := checkEnvName("v2.secrets.key_env", v.Secrets.KeyEnv, DefaultSecretsKeyEnv); err != nil {
		return err
	}
	if err := checkEnvName("v2.auth.token_env", v.Auth.TokenEnv, DefaultTokenEnv); err != nil {
		return err
	}
	// Read with os.Getenv: a name no variable can have found nothing, and Ray's token was never sent.
	if err := checkEnvName("v2.ray.token_env", v.Ray.TokenEnv, DefaultRayTokenEnv); err != nil {
		return err
	}
	if s.StarvationS < 0 { // fair_share_half_life_s was refused above unless above 0
		return fmt.Errorf("v2.scheduler.starvation_s: %s must not be negative (0 turns the starvation bound off; "+
			"leave it out for the default, %s)", number(s.StarvationS), number(DefaultStarvationS))
	}
	return validateUsers(v.Auth, map[string]string{v.Ray.TokenEnv: "v2.ray.token_env (Ray's token)",
		v.Secrets.KeyEnv: "v2.secrets.key_env (the key that seals every secret)"})
}

// validateUsers checks v2.auth.users: names that are valid and unique (and not the operator's), token variables
// that are names and not shared (with each other, the operator's, or reserved: the other variables mvp reads,
// whose values a user's token would then be), limits in range.
func validateUsers(a Auth, reserved map[string]string) error {
	names, envs := map[string]bool{}, map[string]string{a.TokenEnv: "v2.auth.token_env"}
	for k, u := range a.Users {
		at := fmt.Sprintf("v2.auth.users[%d]", k)
		if !validUserName(u.Name) {
			return fmt.Errorf("%s.name: %q must be 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter", at, u.Name)
		}
		if u.Name == mvp.Operator {
			return fmt.Errorf("%s.name: %q is the internal token's owner; name the user otherwise", at, u.Name)
		}
		if names[u.Name] {
			return fmt.Errorf("%s.name: %q is named twice", at, u.Name)
		}
		names[u.Name] = true
		// A name is a-z 0-9 _ - (checked above): upper-cased, with _ for -, it is a variable's.
		example := "MVP_TOKEN_" + strings.ToUpper(strings.ReplaceAll(u.Name, "-", "_"))
		if err := checkEnvName(at+".token_env", u.TokenEnv, example); err != nil {
			return err
		}
		if what, ok := reserved[u.TokenEnv]; ok {
			return fmt.Errorf("%s.token_env: %s is the variable of %s: the user's API token would be that value; "+
				"give the user a variable of its own", at, u.TokenEnv, what)
		}
		if prev, dup := envs[u.TokenEnv]; dup {
			return fmt.Errorf("%s.token_env: %s is already the token variable of %s; give each user its own", at,
				u.TokenEnv, prev)
		}
		envs[u.TokenEnv] = at
		for _, l := range []struct {
			key string
			n   int
		}{{"max_gpus", u.MaxGPUs}, {"max_queued", u.MaxQueued}} {
			if l.n < 0 {
				return fmt.Errorf("%s.%s: %d must not be negative (0 or leaving it out means no limit)", at, l.key, l.n)
			}
		}
		if math.IsNaN(u.Share) || math.IsInf(u.Share, 0) {
			return fmt.Errorf("%s.share: %v is not a number of shares; give a finite number such as 1 or 2", at, u.Share)
		}
		if u.Share <= 0 {
			return fmt.Errorf("%s.share: %s must be above 0: it is the user's weight in fair share (leave it out for "+
				"1; a smaller share, such as 0.5, ranks the user behind the others)", at, number(u.Share))
		}
		// Fair share ranks by usage ÷ share: a share far from 1 makes that +Inf, or rounds every usage to 0.
		if u.Share < MinShare || u.Share > MaxShare {
			return fmt.Errorf("%s.share: %s must be between %s and %s: it is the user's weight in fair share, "+
				"relative to the others' (1 when left out)", at, number(u.Share), number(MinShare), number(MaxShare))
		}
		if p := u.MaxPriority; p != nil && (*p < 0 || *p > mvp.MaxPriority) {
			return fmt.Errorf("%s.max_priority: %d must be between 0 and %d", at, *p, mvp.MaxPriority)
		}
	}
	return nil
}

// number is v as a message quotes it: plain, as a file gives it (99999999999, 0.000001), where %v would turn to
// e-notation from a million on (9.9999999999e+10); only beyond what a person writes out (below 1e-6, from 1e21)
// is it in e-notation, as such a number is written.
func number(v float64) string {
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func validUserName(s string) bool {
	if len(s) == 0 || len(s) > 32 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, r := range s {
		if r != '_' && r != '-' && (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// ShownEnvName is a *_env setting's value as an error may show it: $NAME when it reads as a variable's name, cut
// to its first characters when it looks like a secret pasted in its place (16 or more characters with a lower-case
// letter, or no name at all), so that a token put in the file is not echoed to the terminal and the log.
func ShownEnvName(name string) string {
	if validEnvName(name) && (len(name) < 16 || strings.ToUpper(name) == name) {
		return "$" + name
	}
	cut := []rune(name)
	if len(cut) > 3 {
		cut = cut[:3]
	}
	return fmt.Sprintf("%q… (%d characters, not shown whole: is it the token itself? name the variable that holds it)",
		string(cut), len(name))
}

// checkEnvName refuses a *_env setting (key) whose value is not a variable's name, or looks like the secret
// itself pasted in its place (ShownEnvName would not show it whole: 16 or more characters with a lower-case
// letter). Such a value that was a valid name was accepted and then echoed ("no API token: set $<token>", the log).
func checkEnvName(key, name, example string) error {
	shown := ShownEnvName(name)
	if !validEnvName(name) {
		return fmt.Errorf("%s: %s is not an environment variable name (name the variable that holds the secret, "+
			"e.g. %s; the secret itself never goes in the file)", key, shown, example)
	}
	if shown != "$"+name {
		return fmt.Errorf("%s: %s looks like the secret itself, not a variable's name (name the variable that "+
			"holds it, e.g. %s; a name of 16 or more characters is taken for a variable's only in upper case)", key,
			shown, example)
	}
	return nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}

// Tick is the scheduler's period.
func (s Scheduler) Tick() time.Duration { return seconds(s.TickS) }

// RetryInterval is the wait after an INSUFFICIENT_RESOURCES attempt.
func (s Scheduler) RetryInterval() time.Duration { return seconds(s.RetryIntervalS) }

// GangWait is how long placement groups may stay unplaceable before the attempt is stopped and requeued.
func (s Scheduler) GangWait() time.Duration { return seconds(s.GangWaitS) }

// PackageRetention is how long an unused Ray-door package is kept.
func (r Ray) PackageRetention() time.Duration { return seconds(r.PackageRetentionS) }

// LogCopyInterval is how often a running attempt's log is copied into the task folder.
func (r Ray) LogCopyInterval() time.Duration { return seconds(r.LogCopyS) }

// RequestTimeout bounds one Ray REST call.
func (r Ray) RequestTimeout() time.Duration { return seconds(r.RequestTimeoutS) }

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// validPort reports whether p is a port number, 1..65535.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}
