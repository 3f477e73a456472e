package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// template is template.yaml, read for the functions' environment.
type template struct{ root *yaml.Node }

func loadTemplate(path string) (*template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a YAML mapping", path)
	}
	return &template{root: doc.Content[0]}, nil
}

// get walks mapping keys from n; nil when a key is missing.
func get(n *yaml.Node, path ...string) *yaml.Node {
	for _, k := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
				break
			}
		}
		n = next
	}
	return n
}

// env is the environment template.yaml gives function id (Globals, then
// the function's own variables) with its references resolved on the local
// stack: the bucket, table and queue to the run's, KeyPrefix to the run's
// prefix, other parameters to their defaults, conditions (!If) as true.
// Variables whose value cannot be had locally (secrets, the CDN's ids and
// ARNs, a stack id) are left out and named in dropped; the API's accounts
// secret is replaced by the accounts inline (TILECACHE_ACCOUNTS), the log
// function's log bucket by the run's bucket.
func (t *template) env(id string, l local) (env map[string]string, dropped []string, err error) {
	fn := get(t.root, "Resources", id)
	if fn == nil {
		return nil, nil, fmt.Errorf("template.yaml: no resource %s", id)
	}
	r := resolver{t: t, l: l}
	env = map[string]string{}
	for _, vars := range []*yaml.Node{get(t.root, "Globals", "Function", "Environment", "Variables"), get(fn, "Properties", "Environment", "Variables")} {
		if vars == nil {
			continue
		}
		for i := 0; i+1 < len(vars.Content); i += 2 {
			name := vars.Content[i].Value
			v, ok := r.value(vars.Content[i+1])
			switch {
			case name == "TILECACHE_ACCOUNTS_SECRET":
				delete(env, name)
				env["TILECACHE_ACCOUNTS"] = l.Accounts
			case id == "LogsFunction" && name == "TILECACHE_S3_BUCKET":
				env[name] = l.Bucket // the log bucket: the run's log object is in the stack's bucket
			case !ok:
				delete(env, name)
				if !slices.Contains(dropped, name) {
					dropped = append(dropped, name)
				}
			case v == "":
				delete(env, name) // unset, as Lambda leaves an empty variable
			default:
				env[name] = v
			}
		}
	}
	return env, dropped, nil
}

type resolver struct {
	t *template
	l local
}

var subRef = regexp.MustCompile(`\$\{([A-Za-z0-9:.]+)\}`)

// value resolves a variable's value; false when it cannot be had locally.
func (r resolver) value(n *yaml.Node) (string, bool) {
	switch n.Tag {
	case "!Ref":
		return r.ref(n.Value)
	case "!Sub":
		ok := true
		s := subRef.ReplaceAllStringFunc(n.Value, func(m string) string {
			v, found := r.ref(m[2 : len(m)-1])
			ok = ok && found
			return v
		})
		return s, ok
	case "!If":
		if n.Kind != yaml.SequenceNode || len(n.Content) != 3 {
			return "", false
		}
		return r.value(n.Content[1]) // the condition taken as true: the deployment with the CDN
	}
	if n.Kind != yaml.ScalarNode || (strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!")) {
		return "", false // !GetAtt, !Join, !Select, …: the stack's own resources
	}
	return n.Value, true
}

// ref resolves !Ref name.
func (r resolver) ref(name string) (string, bool) {
	switch name {
	case "TileBucket":
		return r.l.Bucket, true
	case "TaskTable":
		return r.l.Table, true
	case "LaneQueue":
		return r.l.QueueURL, true
	case "KeyPrefix":
		return r.l.Prefix, true
	}
	if p := get(r.t.root, "Parameters", name); p != nil {
		if d := get(p, "Default"); d != nil && d.Kind == yaml.ScalarNode {
			return d.Value, true
		}
	}
	return "", false
}
