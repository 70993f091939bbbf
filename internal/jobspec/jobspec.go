// Package jobspec parses and validates the YAML (or JSON) jobspec users submit, and applies its defaults.
//
// Required fields per workload:
//
//	field            ppo  grpo  sft
//	workload         yes  yes   yes
//	nnodes           yes  yes   yes
//	n_gpus_per_node  yes  yes   yes
//	model_path       yes  yes   yes
//	train_file       yes  yes   yes
//	val_file         yes  yes   no
//
// Defaults: name = the workload; code_path = dev.yaml's user_code_path; overrides and env empty.
package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/taskfs"
)

// Spec is a jobspec. The field names are a contract.
type Spec struct {
	Workload    mvp.Workload      `json:"workload" yaml:"workload"`
	NNodes      int               `json:"nnodes" yaml:"nnodes"`
	GPUsPerNode int               `json:"n_gpus_per_node" yaml:"n_gpus_per_node"`
	Name        string            `json:"name,omitempty" yaml:"name,omitempty"`
	ModelPath   string            `json:"model_path,omitempty" yaml:"model_path,omitempty"`
	TrainFile   string            `json:"train_file,omitempty" yaml:"train_file,omitempty"`
	ValFile     string            `json:"val_file,omitempty" yaml:"val_file,omitempty"`
	CodePath    string            `json:"code_path,omitempty" yaml:"code_path,omitempty"`
	Overrides   []string          `json:"overrides" yaml:"overrides"`
	Env         map[string]string `json:"env" yaml:"env"`
	// MaxRuntimeS is the declared upper bound of one attempt's run, in seconds: the scheduler plans with it and
	// the job is stopped (MAX_RUNTIME_EXCEEDED, not retried) when it runs longer. Default and cap: v2.scheduler.
	MaxRuntimeS int `json:"max_runtime_s,omitempty" yaml:"max_runtime_s,omitempty"`
	// MaxQueuedS bounds the wait from submission to the first start (MAX_QUEUED_EXCEEDED past it).
	MaxQueuedS int `json:"max_queued_s,omitempty" yaml:"max_queued_s,omitempty"`
	// HeartbeatTimeoutS: a running attempt whose progress file (MVP_PROGRESS_FILE) has not changed for this long
	// is stopped as HEARTBEAT_LOST and retried like INFRA; 0 or absent: no heartbeat is required.
	HeartbeatTimeoutS int `json:"heartbeat_timeout_s,omitempty" yaml:"heartbeat_timeout_s,omitempty"`
	// AfterOK names tasks that must end SUCCEEDED before this one may start; if one ends FAILED or CANCELED this
	// task is CANCELED. AfterAny names tasks that must end, however they end.
	AfterOK  []string `json:"after_ok,omitempty" yaml:"after_ok,omitempty"`
	AfterAny []string `json:"after_any,omitempty" yaml:"after_any,omitempty"`
	// ResumeFrom names a task whose checkpoints this run continues from, one that ended or one this task starts
	// after (after_ok, after_any): verl gets its checkpoint folder (for a task that itself resumed, its chain's
	// first task's, where its run wrote) as trainer.default_local_dir with trainer.resume_mode=auto. One run at a
	// time writes a folder. `mvp resubmit --resume` sets it.
	ResumeFrom string `json:"resume_from,omitempty" yaml:"resume_from,omitempty"`
	// Priority 0..100 orders the queue within the scheduling policy, higher first; absent: mvp.DefaultPriority
	// (or the submitter's max_priority when that is lower). Above the submitter's max_priority it is refused.
	Priority *int `json:"priority,omitempty" yaml:"priority,omitempty"`
	// Secrets maps environment variables of the job to stored secrets (WANDB_API_KEY: wandb): their values are
	// put in the job's environment only in the submission sent to Ray, read afresh for every attempt.
	Secrets map[string]string `json:"secrets,omitempty" yaml:"secrets,omitempty"`
}

// Limits bound what Parse accepts.
type Limits struct {
	MaxBytes int
	MaxDepth int
	MaxNodes int
}

// DefaultLimits are the service's limits.
var DefaultLimits = Limits{MaxBytes: 1 << 20, MaxDepth: 16, MaxNodes: 10000}

// Bounds of values.
const (
	MaxNNodes      = 64
	MaxGPUsPerNode = 16
	MaxOverrides   = 200
	MaxEnv         = 100
	// MaxSecrets bounds the secrets a jobspec names.
	MaxSecrets = 50
	// MaxDependencies bounds after_ok and after_any together.
	MaxDependencies = 50
	// MaxHeartbeatTimeoutS bounds heartbeat_timeout_s (a week).
	MaxHeartbeatTimeoutS = 7 * 24 * 3600
	maxValue             = 4096
	maxEnvValue          = 32 << 10
	// maxOverrideBytes bounds the overrides in all: they go into the one shell command line Ray runs, and Linux
	// refuses a single argument over 128 KiB.
	maxOverrideBytes = 64 << 10
)

// gangKeys are the Hydra keys that mvp sets from the jobspec's gang fields: an override must not change them.
var gangKeys = []struct{ key, field string }{
	{"trainer.nnodes", "nnodes"},
	{"trainer.n_gpus_per_node", "n_gpus_per_node"},
}

// poolKeys are the Hydra keys with which verl asks for GPUs beyond the trainer's gang (main_ppo's separate reward
// model pool): mvp admits and reserves the gang only, so an override must not set them.
var poolKeys = []string{"reward_model.enable_resource_pool", "reward_model.nnodes", "reward_model.n_gpus_per_node"}

var (
	nameRE     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)
	overrideRE = regexp.MustCompile(`^[+~]{0,2}[A-Za-z_][A-Za-z0-9_.\-\[\]@/]*$`)
	envRE      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// pathRE is the character set of paths: no spaces, quotes or shell metacharacters.
	pathRE = regexp.MustCompile(`^/[A-Za-z0-9._/@+=,:%~-]*$`)
)

// fields are the known top-level keys and the kind each must be.
var fields = map[string]yaml.Kind{
	"workload": yaml.ScalarNode, "nnodes": yaml.ScalarNode, "n_gpus_per_node": yaml.ScalarNode,
	"name": yaml.ScalarNode, "model_path": yaml.ScalarNode, "train_file": yaml.ScalarNode, "val_file": yaml.ScalarNode,
	"code_path": yaml.ScalarNode, "overrides": yaml.SequenceNode, "env": yaml.MappingNode,
	"max_runtime_s": yaml.ScalarNode, "max_queued_s": yaml.ScalarNode, "heartbeat_timeout_s": yaml.ScalarNode,
	"after_ok": yaml.SequenceNode, "after_any": yaml.SequenceNode, "resume_from": yaml.ScalarNode,
	"secrets": yaml.MappingNode, "priority": yaml.ScalarNode,
}

// shapes shows, for each field that is a list or a mapping, what it holds, with an example: a field of the wrong
// kind is refused with it.
var shapes = map[string]string{
	"overrides": "a list of verl overrides (overrides: [trainer.total_epochs=1])",
	"env":       "a mapping of environment variables to values (env: {WANDB_MODE: offline})",
	"after_ok":  "a list of task ids (after_ok: [mvp2-ppo-20251223-143201-7f3a])",
	"after_any": "a list of task ids (after_any: [mvp2-ppo-20251223-143201-7f3a])",
	"secrets":   "a mapping of environment variables to the names of stored secrets (secrets: {WANDB_API_KEY: wandb})",
}

// listFields are the top-level lists of strings; SetPath appends to them.
var listFields = map[string]bool{"overrides": true, "after_ok": true, "after_any": true}

// intFields are the top-level fields whose values are integers (SetPath parses them).
var intFields = map[string]bool{"nnodes": true, "n_gpus_per_node": true, "max_runtime_s": true, "max_queued_s": true,
	"heartbeat_timeout_s": true, "priority": true}

// IntField reports whether the top-level field name holds an integer.
func IntField(name string) bool { return intFields[name] }

func invalid(field, format string, args ...any) error {
	return mvp.Errorf(mvp.CodeInvalid, field, format, args...)
}

// Parse reads one YAML or JSON document into a Spec, refusing anything not of its shape, then validates it.
func Parse(body []byte, l Limits) (*Spec, error) {
	root, err := parseShape(body, l)
	if err != nil {
		return nil, err
	}
	var s Spec
	if err := decodeFields(root, &s); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// CheckShape checks what Parse checks of a document's shape, with its own line numbers: one YAML or JSON
// document, no anchors or aliases, known fields each given once, each of its kind (a scalar, a list, a mapping).
// Not the values. The CLI checks a file with it before editing it (-e), since what it sends then is the edited
// copy, in which a field given twice or a second document is gone.
func CheckShape(body []byte, l Limits) error {
	_, err := parseShape(body, l)
	return err
}

const jsonThenMoreMsg = "the jobspec holds more than one JSON value (its object is followed by more); send one object"

// jsonThenMore reports whether body is a JSON object followed by more than white space: refused by the YAML
// parser in its own words ("did not find expected <document start>"), which a JSON sender cannot act on. Only
// asked of a body the parser refused.
func jsonThenMore(body []byte) bool {
	if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '{' {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage
	if dec.Decode(&v) != nil {
		return false
	}
	return len(bytes.TrimSpace(body[dec.InputOffset():])) > 0
}

// maxKeySpan is the most characters yaml.v3 reads from a key's first character (a quote included) to its colon.
const maxKeySpan = 1024

// longKey finds a key longer than maxKeySpan in body: a quoted string followed by a colon (JSON, or YAML in quotes),
// a plain key at a line's start (after its indent and any "- ") or after a flow mapping's "{" or ",", on one line. It returns the key's line (from
// 1) and its length to its colon, in characters. Only asked of a body the parser refused, whose own words for
// this ("did not find expected ',' or '}'" of valid JSON) say nothing of the key.
func longKey(body []byte) (line, n int, ok bool) {
	for i, l := range strings.Split(string(body), "\n") {
		if n := longKeyIn(l); n > 0 {
			return i + 1, n, true
		}
	}
	return 0, 0, false
}

// longKeyIn is the length to its colon of a key longer than maxKeySpan in line l, or 0.
func longKeyIn(l string) int {
	rest := strings.TrimLeft(l, " ")
	for strings.HasPrefix(rest, "- ") {
		rest = strings.TrimLeft(rest[2:], " ")
	}
	if rest != "" && rest[0] != '"' && rest[0] != '\'' && rest[0] != '#' {
		if c := strings.Index(rest+" ", ": "); c >= 0 && utf8.RuneCountInString(rest[:c]) > maxKeySpan {
			return utf8.RuneCountInString(rest[:c])
		}
	}
	for i := 0; i < len(l); i++ {
		q := l[i]
		if q == '{' || q == ',' { // a plain key in a flow mapping
			start := i + 1
			for start < len(l) && l[start] == ' ' {
				start++
			}
			if start < len(l) && l[start] != '"' && l[start] != '\'' {
				if c := strings.IndexAny(l[start:], ":,}"); c >= 0 && l[start+c] == ':' {
					if n := utf8.RuneCountInString(l[start : start+c]); n > maxKeySpan {
						return n
					}
				}
			}
			continue
		}
		if q != '"' && q != '\'' {
			continue
		}
		j := i + 1
		for j < len(l) && l[j] != q {
			if q == '"' && l[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(l) {
			return 0 // the string goes on past the line
		}
		k := j + 1
		for k < len(l) && (l[k] == ' ' || l[k] == '\t') {
			k++
		}
		if k < len(l) && l[k] == ':' {
			if n := utf8.RuneCountInString(l[i:k]); n > maxKeySpan {
				return n
			}
		}
		i = j
	}
	return 0
}

// parseShape reads one document and checks its shape (CheckShape); it returns the root mapping.
func parseShape(body []byte, l Limits) (*yaml.Node, error) {
	if l.MaxBytes > 0 && len(body) > l.MaxBytes {
		return nil, mvp.Errorf(mvp.CodeTooLarge, "", "the jobspec is %d bytes; at most %d are accepted", len(body), l.MaxBytes)
	}
	if !utf8.Valid(body) {
		return nil, invalid("", "the jobspec is not valid UTF-8")
	}
	if bytes.IndexByte(body, 0) >= 0 {
		return nil, invalid("", "the jobspec contains a NUL byte")
	}
	if l.MaxNodes > 0 && nodeBound(body) > l.MaxNodes {
		// It may hold more nodes than allowed, and yaml.v3 builds every node before they can be counted: about
		// 120 MB for a megabyte of "[1,1,1,…". Such bodies are parsed one at a time, so that a burst of them
		// cannot take the service's memory; an ordinary jobspec is nowhere near this.
		heavy <- struct{}{}
		defer func() { <-heavy }()
		if heavyHook != nil {
			heavyHook(true)
			defer heavyHook(false)
		}
	}
	body, err := YAMLText(body)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(body))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, invalid("", "the jobspec is empty; it needs at least workload, nnodes and n_gpus_per_node")
		}
		if jsonThenMore(body) {
			return nil, invalid("", jsonThenMoreMsg)
		}
		if line, n, ok := longKey(body); ok {
			return nil, invalid("", "the key on line %d is %d characters long to its colon: YAML (and so a JSON "+
				"jobspec) reads a key of at most %d; shorten it", line, n, maxKeySpan)
		}
		msg := YAMLProblem(body, err)
		if strings.Contains(msg, "cannot start any token") && bytes.ContainsRune(body, '\t') {
			msg += " (the jobspec holds a tab: YAML indents with spaces only)"
		}
		return nil, invalid("", "the jobspec is not valid YAML or JSON: %s", msg)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, invalid("", "the jobspec holds more than one YAML document; send one")
	} else if !errors.Is(err, io.EOF) {
		if jsonThenMore(body) {
			return nil, invalid("", jsonThenMoreMsg)
		}
		return nil, invalid("", "the jobspec is not valid YAML: %s", yamlMsg(err))
	}
	count := 0
	if err := walk(&doc, 0, &count, l); err != nil {
		return nil, err
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, invalid("", "the jobspec must be a mapping of fields (workload: ppo, nnodes: 1, …)")
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, invalid("", "line %d: a field name must be a plain string", k.Line)
		}
		kind, ok := fields[k.Value]
		if !ok {
			return nil, invalid(clip(k.Value), "unknown field %q (line %d)%s", clip(k.Value), k.Line, suggest(k.Value))
		}
		if seen[k.Value] {
			return nil, invalid(k.Value, "field %q is given twice (line %d)", k.Value, k.Line)
		}
		seen[k.Value] = true
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			continue
		}
		if v.Kind != kind {
			shape := kindName(kind)
			if sh, ok := shapes[k.Value]; ok {
				shape = sh
			}
			return nil, invalid(k.Value, "must be %s (line %d)", shape, v.Line)
		}
	}
	return root, nil
}

// YAMLText returns a jobspec's text as the YAML parser can read it. A JSON jobspec is written so that YAML reads
// the value JSON does (mvp.JSONForYAML: surrogate pairs, which Python's json.dumps writes for a character outside
// the Basic Multilingual Plane; "\/"; characters JSON carries raw and YAML's reader refuses, such as DEL, which a
// stored spec re-encoded for a resubmit holds when its YAML wrote them escaped), after a byte order mark, if any;
// a lone surrogate half, which is no character, is refused saying so. Anything else is returned as it is. Every
// reader of a jobspec's text goes through it: the submit, a resubmit reading what the user gave, and the CLI
// editing a file (-e) or sending a schedule's.
func YAMLText(body []byte) ([]byte, error) {
	if j := bytes.TrimPrefix(body, []byte("\ufeff")); len(j) > 0 {
		if trimmed := bytes.TrimSpace(j); len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(j) {
			if mvp.LoneSurrogate(j) {
				return nil, invalid("", "the jobspec %s", mvp.LoneSurrogateWhy)
			}
			return mvp.JSONForYAML(j), nil
		}
	}
	return body, nil
}

// heavy admits one parse at a time of a body that may hold more than Limits.MaxNodes nodes.
var heavy = make(chan struct{}, 1)

// heavyHook, when set (by tests), is called as a heavy parse starts (true) and ends (false).
var heavyHook func(enter bool)

// nodeBound is an upper bound on the YAML nodes body can make (the document node counted). Apart from the document
// and its root, every node is brought in by an indicator or a line break before it (a sequence entry's "-", a
// key's "?" or a line, a value's ":", a flow item's "," or its collection's "[" or "{"), and one such byte brings
// in at most a key and its value; bytes inside quoted or block scalars are counted too, so it only overestimates.
func nodeBound(body []byte) int {
	n := 0
	for _, c := range body {
		switch c {
		case '-', ':', '?', ',', '[', '{', '\n':
			n++
		}
	}
	return 3*n + 2
}

// walk enforces depth and size limits and refuses anchors and aliases (no alias bombs).
func walk(n *yaml.Node, depth int, count *int, l Limits) error {
	*count++
	if l.MaxNodes > 0 && *count > l.MaxNodes {
		return invalid("", "the jobspec has more than %d YAML nodes", l.MaxNodes)
	}
	if l.MaxDepth > 0 && depth > l.MaxDepth {
		return invalid("", "the jobspec is nested deeper than %d levels", l.MaxDepth)
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return invalid("", "line %d: YAML anchors and aliases are not accepted in a jobspec", n.Line)
	}
	for _, c := range n.Content {
		if err := walk(c, depth+1, count, l); err != nil {
			return err
		}
	}
	return nil
}

func decodeFields(root *yaml.Node, s *Spec) error {
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i].Value, root.Content[i+1]
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			continue
		}
		var err error
		switch k {
		case "workload":
			var w string
			w, err = str(k, v)
			s.Workload = mvp.Workload(w)
		case "nnodes":
			s.NNodes, err = integer(k, v)
		case "n_gpus_per_node":
			s.GPUsPerNode, err = integer(k, v)
		case "max_runtime_s":
			s.MaxRuntimeS, err = integer(k, v)
		case "max_queued_s":
			s.MaxQueuedS, err = integer(k, v)
		case "heartbeat_timeout_s":
			s.HeartbeatTimeoutS, err = integer(k, v)
		case "priority":
			var p int
			p, err = integer(k, v)
			s.Priority = &p
		case "name":
			s.Name, err = str(k, v)
		case "model_path":
			s.ModelPath, err = str(k, v)
		case "train_file":
			s.TrainFile, err = str(k, v)
		case "val_file":
			s.ValFile, err = str(k, v)
		case "code_path":
			s.CodePath, err = str(k, v)
		case "resume_from":
			s.ResumeFrom, err = str(k, v)
		case "overrides":
			for j, item := range v.Content {
				f := fmt.Sprintf("overrides[%d]", j)
				if item.Kind != yaml.ScalarNode {
					return invalid(f, "each override must be a string key=value (line %d)", item.Line)
				}
				o, err := str(f, item)
				if err != nil {
					return err
				}
				s.Overrides = append(s.Overrides, o)
			}
		case "after_ok", "after_any":
			var ids []string
			for j, item := range v.Content {
				f := fmt.Sprintf("%s[%d]", k, j)
				if item.Kind != yaml.ScalarNode {
					return invalid(f, "each entry must be a task id (line %d)", item.Line)
				}
				id, err := str(f, item)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			if k == "after_ok" {
				s.AfterOK = ids
			} else {
				s.AfterAny = ids
			}
		case "secrets":
			s.Secrets, err = stringMap("secrets", v, "secrets must map environment variable names to secret names",
				"%q is given twice")
		case "env":
			s.Env, err = stringMap("env", v, "env must map names to string values", "env variable %q is given twice")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// stringMap decodes a mapping of plain strings under field; shape names what it must map, twice is the message
// (with the key) for a key given twice.
func stringMap(field string, v *yaml.Node, shape, twice string) (map[string]string, error) {
	out := map[string]string{}
	for j := 0; j+1 < len(v.Content); j += 2 {
		kn, vn := v.Content[j], v.Content[j+1]
		f := field + "." + clip(kn.Value)
		if kn.Kind != yaml.ScalarNode || vn.Kind != yaml.ScalarNode {
			return nil, invalid(f, shape+" (line %d)", kn.Line)
		}
		if _, dup := out[kn.Value]; dup {
			return nil, invalid(f, twice+" (line %d)", clip(kn.Value), kn.Line)
		}
		val, err := str(f, vn)
		if err != nil {
			return nil, err
		}
		out[kn.Value] = val
	}
	return out, nil
}

func str(field string, n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", invalid(field, "must be a string (line %d)", n.Line)
	}
	switch n.Tag {
	case "!!str", "!!int", "!!float", "!!bool":
		return n.Value, nil
	}
	return "", invalid(field, "must be a string, got %s (line %d)", n.Tag, n.Line)
}

// (Validate then checks the field's own range.)
func integer(field string, n *yaml.Node) (int, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		if digitsRE.MatchString(n.Value) {
			return 0, invalid(field, "must be a whole number, not text: write %s, not %q (line %d)", clip(n.Value),
				clip(n.Value), n.Line)
		}
		return 0, invalid(field, "must be a whole number such as 2, got the text %q (line %d)", clip(n.Value), n.Line)
	}
	// YAML reads digits too large for its integers as a float: still a whole number, out of range below.
	whole := n.Tag == "!!int" || n.Tag == "!!float" && digitsRE.MatchString(n.Value)
	if n.Kind != yaml.ScalarNode || !whole {
		return 0, invalid(field, "must be a whole number, got %q (line %d)", clip(n.Value), n.Line)
	}
	if !digitsRE.MatchString(n.Value) {
		// YAML also reads 1_0 (10), 0x1, 0o1 and 0_4 (octal) as integers: not what the reader of the spec sees.
		return 0, invalid(field, "write it in decimal digits, got %q (line %d)", clip(n.Value), n.Line)
	}
	v, err := strconv.ParseInt(n.Value, 10, 32)
	if err != nil {
		return 0, invalid(field, "%s is far out of range: %s (line %d)", clip(n.Value), intRanges[field], n.Line)
	}
	return int(v), nil
}

// digitsRE is a whole number written out in digits.
var digitsRE = regexp.MustCompile(`^[-+]?[0-9]+$`)

// intRanges says what each integer field takes, for a number too large to read (Validate checks the ranges).
var intRanges = map[string]string{
	"nnodes":              fmt.Sprintf("nnodes is from 1 to %d", MaxNNodes),
	"n_gpus_per_node":     fmt.Sprintf("n_gpus_per_node is from 1 to %d", MaxGPUsPerNode),
	"max_runtime_s":       "max_runtime_s is seconds, at most v2.scheduler.max_runtime_cap_s",
	"max_queued_s":        "max_queued_s is seconds, at most v2.scheduler.max_queued_cap_s",
	"heartbeat_timeout_s": fmt.Sprintf("heartbeat_timeout_s is from 1 to %d seconds", MaxHeartbeatTimeoutS),
	"priority":            fmt.Sprintf("priority is from 0 to %d", mvp.MaxPriority),
}

// Validate checks every field; the error names the field's path and says what to fix.
func (s *Spec) Validate() error {
	if s.Workload == "" {
		return invalid("workload", "workload is required: one of %s", mvp.JobSpecWorkloadNames())
	}
	info, ok := s.Workload.Info()
	if !ok {
		return invalid("workload", "unknown workload %q: use %s", clip(string(s.Workload)), mvp.JobSpecWorkloadNames())
	}
	if info.RayDoor {
		return invalid("workload", "%s tasks are not made from a jobspec: submit them with Ray's own client "+
			"(ray job submit, JobSubmissionClient) to mvp's Ray Jobs door at <mvp>/ray", s.Workload)
	}
	var missing []string // all at once: one round trip, not one per field
	for _, f := range []struct {
		name    string
		missing bool
	}{{"nnodes", s.NNodes == 0}, {"n_gpus_per_node", s.GPUsPerNode == 0}, {"model_path", s.ModelPath == ""},
		{"train_file", s.TrainFile == ""}, {"val_file", s.ValFile == "" && info.RequiresValFile}} {
		if f.missing {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 1 {
		return invalid(missing[0], "missing required fields: %s", strings.Join(missing, ", "))
	}
	for _, f := range []struct {
		name   string
		n, max int
	}{{"nnodes", s.NNodes, MaxNNodes}, {"n_gpus_per_node", s.GPUsPerNode, MaxGPUsPerNode}} {
		switch {
		case f.n == 0:
			return invalid(f.name, "%s is required and must be from 1 to %d (0 or none given)", f.name, f.max)
		case f.n < 1 || f.n > f.max:
			return invalid(f.name, "%s must be from 1 to %d, got %d", f.name, f.max, f.n)
		}
	}
	if s.MaxRuntimeS < 0 {
		return invalid("max_runtime_s", "max_runtime_s must be a whole number of seconds ≥ 1, or 0 or leave it out for "+
			"v2.scheduler.default_max_runtime_s, got %d", s.MaxRuntimeS)
	}
	if s.Priority != nil && (*s.Priority < 0 || *s.Priority > mvp.MaxPriority) {
		return invalid("priority", "priority must be from 0 to %d (default %d), got %d", mvp.MaxPriority,
			mvp.DefaultPriority, *s.Priority)
	}
	if s.MaxQueuedS < 0 {
		return invalid("max_queued_s", "max_queued_s must be a whole number of seconds ≥ 1, or 0 or leave it out for "+
			"v2.scheduler.default_max_queued_s, got %d", s.MaxQueuedS)
	}
	if s.HeartbeatTimeoutS < 0 || s.HeartbeatTimeoutS > MaxHeartbeatTimeoutS {
		return invalid("heartbeat_timeout_s", "heartbeat_timeout_s must be from 1 to %d seconds (or absent: no heartbeat), got %d",
			MaxHeartbeatTimeoutS, s.HeartbeatTimeoutS)
	}
	if s.Name != "" && !nameRE.MatchString(s.Name) {
		return invalid("name", "name %q must be 1–40 characters of a-z, 0-9 and '-', starting and ending with a letter or digit", clip(s.Name))
	}
	for _, p := range []struct {
		field, value string
		required     bool
	}{
		{"model_path", s.ModelPath, true},
		{"train_file", s.TrainFile, true},
		{"val_file", s.ValFile, info.RequiresValFile},
		{"code_path", s.CodePath, false},
	} {
		if p.value == "" {
			if p.required {
				return invalid(p.field, "%s is required for workload %s", p.field, s.Workload)
			}
			continue
		}
		if err := checkPath(p.field, p.value); err != nil {
			return err
		}
	}
	if len(s.Overrides) > MaxOverrides {
		return invalid("overrides", "at most %d overrides, got %d", MaxOverrides, len(s.Overrides))
	}
	total := 0
	for i, o := range s.Overrides {
		f := fmt.Sprintf("overrides[%d]", i)
		k, v, ok := strings.Cut(o, "=")
		if !ok || !overrideRE.MatchString(k) {
			return invalid(f, "%q is not a Hydra override key=value (e.g. trainer.total_epochs=1)", clip(o))
		}
		if len(o) > maxValue || strings.ContainsAny(v, "\x00\n\r") {
			return invalid(f, "the value must be one line of at most %d bytes", maxValue)
		}
		// The key as Hydra applies it: without +, ++ or ~, and without an @package.
		key, _, _ := strings.Cut(strings.TrimLeft(k, "+~"), "@")
		for _, g := range gangKeys {
			if key == g.key {
				return invalid(f, "set the %s field instead of overriding %s", g.field, g.key)
			}
			// Hydra merges a value given for a parent (trainer={nnodes: 8}) into it.
			if strings.HasPrefix(g.key, key+".") {
				return invalid(f, "overriding %s as a whole could change %s: set the %s field for the gang, and "+
					"override %s.<key> one key at a time for the rest", key, g.key, g.field, key)
			}
		}
		for _, pk := range poolKeys {
			if key == pk || strings.HasPrefix(pk, key+".") {
				return invalid(f, "%s would make verl ask for GPUs beyond the gang mvp admits (nnodes × n_gpus_per_node): "+
					"a separate reward model pool is not supported; keep the reward model colocated (the default), and "+
					"override reward_model.<key> one key at a time for the rest", key)
			}
		}
		if total += len(o); total > maxOverrideBytes {
			return invalid("overrides", "the overrides come to more than %d bytes in all: Ray runs them as one "+
				"command line, which the operating system limits", maxOverrideBytes)
		}
	}
	if err := s.validateDeps(); err != nil {
		return err
	}
	if err := s.validateSecrets(); err != nil {
		return err
	}
	if s.ResumeFrom != "" && !taskfs.TaskIDPattern.MatchString(s.ResumeFrom) {
		return invalid("resume_from", "%q is not a task id (they look like mvp2-ppo-20251223-143201-7f3a)", clip(s.ResumeFrom))
	}
	if len(s.Env) > MaxEnv {
		return invalid("env", "at most %d environment variables, got %d", MaxEnv, len(s.Env))
	}
	for _, k := range sortedKeys(s.Env) {
		f := "env." + clip(k)
		if !envRE.MatchString(k) {
			return invalid(f, "%q is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)", clip(k))
		}
		if strings.HasPrefix(k, "RAY_") || strings.HasPrefix(k, "MVP_") {
			return invalid(f, "%s is reserved: RAY_* and MVP_* variables are set by Ray and mvp", k)
		}
		if why, ok := MvpSetsEnv[k]; ok && k != "PYTHONPATH" {
			return invalid(f, "%s is reserved: mvp sets it to %s", k, why)
		}
		if v := s.Env[k]; len(v) > maxEnvValue || strings.ContainsRune(v, 0) {
			return invalid(f, "the value must be at most %d bytes without NUL", maxEnvValue)
		}
	}
	return nil
}

// validateDeps checks after_ok and after_any: task ids, at most MaxDependencies in all, none named twice. Whether
// they exist is checked at submit, against the store.
func (s *Spec) validateDeps() error {
	if n := len(s.AfterOK) + len(s.AfterAny); n > MaxDependencies {
		return invalid("after_ok", "at most %d dependencies (after_ok and after_any together), got %d", MaxDependencies, n)
	}
	seen := map[string]string{}
	for _, l := range []struct {
		name string
		ids  []string
	}{{"after_ok", s.AfterOK}, {"after_any", s.AfterAny}} {
		for i, id := range l.ids {
			f := fmt.Sprintf("%s[%d]", l.name, i)
			if !taskfs.TaskIDPattern.MatchString(id) {
				return invalid(f, "%q is not a task id (they look like mvp2-ppo-20251223-143201-7f3a)", clip(id))
			}
			if prev, dup := seen[id]; dup {
				return invalid(f, "%s is named twice (also in %s)", id, prev)
			}
			seen[id] = f
		}
	}
	return nil
}

// MvpSetsEnv names the environment variables besides MVP_* that the job builder (internal/workload) sets, and what
// to: a jobspec's secrets may not name them, nor its env (but for PYTHONPATH, which env extends: the task's code
// path goes first).
var MvpSetsEnv = map[string]string{
	"PYTHONPATH":            "the task's code path, then env's PYTHONPATH",
	"TENSORBOARD_DIR":       "the attempt's tensorboard folder",
	"VERL_FILE_LOGGER_PATH": "the attempt's metrics.jsonl",
}

// validateSecrets checks the secrets mapping: environment variable names as for env (and not also in env), secret
// names of the secret name shape, at most MaxSecrets.
func (s *Spec) validateSecrets() error {
	if len(s.Secrets) > MaxSecrets {
		return invalid("secrets", "at most %d secrets, got %d", MaxSecrets, len(s.Secrets))
	}
	for _, k := range sortedKeys(s.Secrets) {
		f := "secrets." + clip(k)
		if !envRE.MatchString(k) {
			return invalid(f, "%q is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)", clip(k))
		}
		if strings.HasPrefix(k, "RAY_") || strings.HasPrefix(k, "MVP_") {
			return invalid(f, "%s is reserved: RAY_* and MVP_* variables are set by Ray and mvp", k)
		}
		if why, ok := MvpSetsEnv[k]; ok {
			return invalid(f, "%s is reserved: mvp sets it to %s", k, why)
		}
		if _, both := s.Env[k]; both {
			return invalid(f, "%s is set in env too; give it in one place", k)
		}
		if !mvp.SecretNamePattern.MatchString(s.Secrets[k]) {
			return invalid(f, "%q is not a secret name: a letter or digit, then up to 63 of letters, digits, '_', '.' and '-'",
				clip(s.Secrets[k]))
		}
	}
	return nil
}

// CheckPath checks a path as a jobspec's path fields are checked (absolute, clean, of the characters that need no
// quoting), the error naming field: dev.yaml's user_code_path, which becomes a task's code_path, is checked so.
func CheckPath(field, p string) error { return checkPath(field, p) }

func checkPath(field, p string) error {
	switch {
	case len(p) > maxValue:
		return invalid(field, "the path is longer than %d characters", maxValue)
	case strings.ContainsAny(p, "\x00\n\r"):
		return invalid(field, "the path must be one line without NUL")
	case !strings.HasPrefix(p, "/"):
		return invalid(field, "%q must be an absolute path (e.g. /private/datasets/gsm8k/train.parquet)", clip(p))
	case !pathRE.MatchString(p):
		return invalid(field, "%q: paths may contain only ASCII letters, digits and . _ / @ + = , : %% ~ - (no spaces, quotes, shell metacharacters or other scripts' letters: rename the folder or link to it from such a path)", clip(p))
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return invalid(field, "%q must not contain '..'", clip(p))
		}
	}
	if path.Clean(p) != strings.TrimSuffix(p, "/") && p != "/" {
		return invalid(field, "%q is not a clean path (double slashes or '.' segments)", clip(p))
	}
	return nil
}

// DefaultedFields are the effective spec's fields that the cluster's settings fill when a jobspec leaves them out
// (the time limits and code_path from Defaults, priority from the caller's max_priority): the value stored is that
// day's, not the user's, and a resubmit takes today's instead.
var DefaultedFields = []string{"max_runtime_s", "max_queued_s", "priority", "code_path"}

// Given decodes a jobspec's text as its user sent it (the stored text of an accepted task) into a map, for
// LeftToDefault: what the user gave, as opposed to what the effective spec filled in that day.
func Given(text []byte) (map[string]any, error) {
	body, err := YAMLText(text)
	if err != nil {
		return nil, err
	}
	given := map[string]any{}
	if err := yaml.Unmarshal(body, &given); err != nil {
		return nil, fmt.Errorf("read the jobspec as sent: %w", err)
	}
	return given, nil
}

// LeftToDefault reports whether a jobspec as sent (given, decoded by Given) leaves field, one of DefaultedFields,
// to the cluster's settings: it does not give it, gives it no value (`max_runtime_s:`, YAML's null, which Parse
// takes as absent), or gives the value that Effective fills as if it were absent (0 for max_runtime_s and
// max_queued_s, "" for code_path). A priority given is the user's, 0 too.
func LeftToDefault(given map[string]any, field string) bool {
	v, ok := given[field]
	if !ok || v == nil {
		return true
	}
	switch field {
	case "max_runtime_s", "max_queued_s":
		n, isInt := v.(int)
		return isInt && n == 0
	case "code_path":
		return v == ""
	}
	return false
}

// Defaults are the cluster's values that a jobspec may leave out.
type Defaults struct {
	UserCodePath string
	// DefaultMaxRuntimeS and DefaultMaxQueuedS fill the time limits a jobspec leaves out; MaxRuntimeCapS and
	// MaxQueuedCapS bound what it may ask for (0: no cap).
	DefaultMaxRuntimeS, MaxRuntimeCapS int
	DefaultMaxQueuedS, MaxQueuedCapS   int
}

// CheckCaps refuses time limits above the configured caps.
func (s *Spec) CheckCaps(d Defaults) error {
	if d.MaxRuntimeCapS > 0 && s.MaxRuntimeS > d.MaxRuntimeCapS {
		return invalid("max_runtime_s", "max_runtime_s %d is above this cluster's cap of %d s (v2.scheduler.max_runtime_cap_s)",
			s.MaxRuntimeS, d.MaxRuntimeCapS)
	}
	if d.MaxQueuedCapS > 0 && s.MaxQueuedS > d.MaxQueuedCapS {
		return invalid("max_queued_s", "max_queued_s %d is above this cluster's cap of %d s (v2.scheduler.max_queued_cap_s)",
			s.MaxQueuedS, d.MaxQueuedCapS)
	}
	return nil
}

// Effective returns a copy with defaults applied.
func (s *Spec) Effective(d Defaults) *Spec {
	e := *s
	if e.Name == "" {
		e.Name = string(e.Workload)
	}
	if e.CodePath == "" {
		e.CodePath = d.UserCodePath
	}
	if e.MaxRuntimeS == 0 {
		e.MaxRuntimeS = d.DefaultMaxRuntimeS
	}
	if e.MaxQueuedS == 0 {
		e.MaxQueuedS = d.DefaultMaxQueuedS
	}
	if e.Priority == nil {
		p := mvp.DefaultPriority // lowered to the owner's max_priority where it is lower (the API's checkCaps)
		e.Priority = &p
	}
	if e.Overrides == nil {
		e.Overrides = []string{}
	}
	env := make(map[string]string, len(s.Env))
	for k, v := range s.Env {
		env[k] = v
	}
	e.Env = env
	return &e
}

// SetPath sets a field of a decoded jobspec by its dotted path (nnodes=1, env.WANDB_MODE=offline,
// overrides=a=1 appends one override, after_ok=ID one dependency). Numbers are parsed for the integer fields (intFields).
func SetPath(doc map[string]any, key, value string) error {
	head, rest, nested := strings.Cut(key, ".")
	if _, ok := fields[head]; !ok {
		if hint := suggest(head); nested && !strings.HasPrefix(hint, "; did you mean") {
			// A dotted key that is no field's path is most likely one of verl's (Hydra) settings.
			return fmt.Errorf("unknown field %q: the jobspec has no such field; a verl setting is passed as an "+
				"override: overrides=%s=%s", clip(head), clip(key), clip(value))
		}
		return fmt.Errorf("unknown field %q%s", clip(head), suggest(head))
	}
	switch {
	case (head == "env" || head == "secrets") && nested:
		m, _ := doc[head].(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		m[rest] = value
		doc[head] = m
	case listFields[head] && !nested && value == "[]":
		doc[head] = []any{} // emptied; a later -e head=x adds to it again
	case listFields[head] && !nested:
		list, _ := doc[head].([]any)
		doc[head] = append(list, value)
	case nested:
		return fmt.Errorf("%q has no sub-fields", head)
	case intFields[head]:
		n, err := strconv.ParseInt(value, 10, 32)
		if err != nil && digitsRE.MatchString(value) {
			return fmt.Errorf("%s is out of range: %s, got %s", head, intRanges[head], clip(value))
		}
		if err != nil {
			return fmt.Errorf("%s must be an integer, got %q", head, clip(value))
		}
		doc[head] = int(n)
	default:
		doc[head] = value
	}
	return nil
}

func suggest(k string) string {
	best, bestD := "", 3
	for f := range fields {
		if d := distance(strings.ToLower(k), f); d < bestD {
			best, bestD = f, d
		}
	}
	if best == "" {
		return "; known fields: " + strings.Join(sortedFieldNames(), ", ")
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

func sortedFieldNames() []string {
	out := make([]string, 0, len(fields))
	for f := range fields {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// distance is the Levenshtein distance, for "did you mean".
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "a single value"
}

func yamlMsg(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	return clip(s)
}

// yamlLineSearch is the most lines a document may have for YAMLProblem to look for where a YAML error is by parsing
// its prefixes (only a document that failed: at most that many parses of at most that many lines).
const yamlLineSearch = 200

var yamlLineRe = regexp.MustCompile(`^yaml: line \d+: `)

// YAMLProblem is what yaml.v3's err, the error of parsing body, says (clipped, without its "yaml: "), with the line
// where body stops being YAML: yaml.v3 names the line of its parser's context, counted from 0 for many errors (an
// unclosed "[" on line 2 read "line 1"; a tab on line 3, "line 2"). That line is the first whose prefix of body
// fails with the same problem. A body longer than yamlLineSearch lines, or a problem no prefix shows, keeps
// yaml.v3's line. Every reader of a YAML file a user writes (jobspecs, dev.yaml) says its errors with it.
func YAMLProblem(body []byte, err error) string {
	loc := yamlLineRe.FindStringIndex(err.Error())
	if loc == nil || bytes.Count(body, []byte("\n")) > yamlLineSearch {
		return yamlMsg(err)
	}
	problem := err.Error()[loc[1]:]
	end := 0
	for k := 1; end < len(body); k++ {
		if nl := bytes.IndexByte(body[end:], '\n'); nl < 0 {
			end = len(body)
		} else {
			end += nl + 1
		}
		var n yaml.Node
		if perr := yaml.NewDecoder(bytes.NewReader(body[:end])).Decode(&n); perr != nil &&
			strings.HasSuffix(perr.Error(), ": "+problem) {
			return clip(fmt.Sprintf("line %d: %s", k, problem))
		}
	}
	return yamlMsg(err)
}

func clip(s string) string { return mvp.Clip(s, 80) }
