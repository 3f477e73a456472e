package functions_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// This file reads template.yaml into yaml.Node (the short-form intrinsics
// !Ref, !GetAtt, !Sub, !If … stay in Node.Tag) and evaluates parts of it
// the way CloudFormation would for given parameter values and physical
// resource names, so that tests can compare what a deployment gets with
// what the code reads and calls.

const templatePath = "../template.yaml"

// functionDirs maps each function of the template to its directory under
// functions/ (and its build-<LogicalId> target to that package).
var functionDirs = map[string]string{"ApiFunction": "api", "WorkerFunction": "worker", "CleanerFunction": "cleaner", "TileFunction": "tile", "LogsFunction": "logs"}

// template is the parsed template.yaml.
type template struct {
	root *yaml.Node // the top-level mapping
}

func loadTemplate(t testing.TB) *template {
	t.Helper()
	data, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("parse %s: %v", templatePath, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		t.Fatalf("%s: not a YAML mapping", templatePath)
	}
	return &template{root: doc.Content[0]}
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

// keys returns the keys of a mapping node in order.
func keys(n *yaml.Node) []string {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, n.Content[i].Value)
	}
	return out
}

func (tp *template) resource(id string) *yaml.Node { return get(tp.root, "Resources", id) }

func (tp *template) resourcesOfType(typ string) []string {
	var out []string
	for _, id := range keys(get(tp.root, "Resources")) {
		if get(tp.resource(id), "Type").Value == typ {
			out = append(out, id)
		}
	}
	return out
}

// fnProp returns a function property with the Globals applied (a
// function's own value wins).
func (tp *template) fnProp(id, prop string) *yaml.Node {
	if n := get(tp.resource(id), "Properties", prop); n != nil {
		return n
	}
	return get(tp.root, "Globals", "Function", prop)
}

// tagged reports whether n is the intrinsic fn (short "!Ref" or long
// "Ref"/"Fn::GetAtt" form) and returns its argument.
func tagged(n *yaml.Node, fn string) (*yaml.Node, bool) {
	if n == nil {
		return nil, false
	}
	if n.Tag == "!"+fn {
		return n, true
	}
	long := "Fn::" + fn
	if fn == "Ref" {
		long = "Ref"
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == long {
		return n.Content[1], true
	}
	return nil, false
}

// refTarget returns X of !Ref X, or of !GetAtt X.Attr (with Attr).
func refTarget(n *yaml.Node) (id, attr string) {
	if a, ok := tagged(n, "Ref"); ok {
		return a.Value, ""
	}
	if a, ok := tagged(n, "GetAtt"); ok {
		if a.Kind == yaml.SequenceNode && len(a.Content) == 2 {
			return a.Content[0].Value, a.Content[1].Value
		}
		id, attr, _ := strings.Cut(a.Value, ".")
		return id, attr
	}
	return "", ""
}

// noValue is AWS::NoValue: the property or list item disappears.
type noValue struct{}

// world is what a deployment resolves references to.
type world struct {
	tp     *template
	params map[string]string // parameter values; defaults fill the rest
	refs   map[string]string // Ref of resources (and AWS::Region: us-east-1 unless given)
	atts   map[string]string // GetAtt "Id.Attr"
}

func (w *world) param(name string) (string, bool) {
	if v, ok := w.params[name]; ok {
		return v, true
	}
	p := get(w.tp.root, "Parameters", name)
	if p == nil {
		return "", false
	}
	if d := get(p, "Default"); d != nil {
		return d.Value, true
	}
	return "", true // required, not given: empty
}

func (w *world) ref(name string) (any, error) {
	switch name {
	case "AWS::NoValue":
		return noValue{}, nil
	case "AWS::Region":
		if v, ok := w.refs[name]; ok { // a stack in another region
			return v, nil
		}
		return "us-east-1", nil
	case "AWS::AccountId":
		return "000000000000", nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::StackName":
		return "tilecache", nil
	case "AWS::StackId":
		return "arn:aws:cloudformation:us-east-1:000000000000:stack/tilecache/6a7b8c90-0000-1111-2222-333344445555", nil
	}
	if v, ok := w.refs[name]; ok {
		return v, nil
	}
	if v, ok := w.param(name); ok {
		if typ := get(w.tp.root, "Parameters", name, "Type"); typ != nil && typ.Value == "CommaDelimitedList" {
			// A list: "" is [""], and each member is space trimmed.
			var list []any
			for _, s := range strings.Split(v, ",") {
				list = append(list, strings.TrimSpace(s))
			}
			return list, nil
		}
		return v, nil
	}
	return nil, fmt.Errorf("Ref %s: unknown to the test's model of a deployment", name)
}

func (w *world) att(id, attr string) (string, error) {
	if v, ok := w.atts[id+"."+attr]; ok {
		return v, nil
	}
	return "", fmt.Errorf("GetAtt %s.%s: unknown to the test's model of a deployment", id, attr)
}

// condition evaluates a named condition of the Conditions section.
func (w *world) condition(name string) (bool, error) {
	n := get(w.tp.root, "Conditions", name)
	if n == nil {
		return false, fmt.Errorf("condition %s is not defined", name)
	}
	return w.boolean(n)
}

func (w *world) boolean(n *yaml.Node) (bool, error) {
	if a, ok := tagged(n, "Condition"); ok {
		return w.condition(a.Value)
	}
	if a, ok := tagged(n, "Equals"); ok && a.Kind == yaml.SequenceNode && len(a.Content) == 2 {
		x, err := w.eval(a.Content[0])
		if err != nil {
			return false, err
		}
		y, err := w.eval(a.Content[1])
		if err != nil {
			return false, err
		}
		return fmt.Sprint(x) == fmt.Sprint(y), nil
	}
	if a, ok := tagged(n, "Not"); ok && a.Kind == yaml.SequenceNode && len(a.Content) == 1 {
		v, err := w.boolean(a.Content[0])
		return !v, err
	}
	// The list tests of the Rules section.
	for _, fn := range []string{"EachMemberEquals", "Contains"} {
		if a, ok := tagged(n, fn); ok && a.Kind == yaml.SequenceNode && len(a.Content) == 2 {
			list, err := w.eval(a.Content[0])
			if err != nil {
				return false, err
			}
			v, err := w.eval(a.Content[1])
			if err != nil {
				return false, err
			}
			members, want := strs(list), fmt.Sprint(v)
			if fn == "Contains" {
				return slices.Contains(members, want), nil
			}
			for _, m := range members {
				if m != want {
					return false, nil
				}
			}
			return true, nil
		}
	}
	for _, fn := range []string{"And", "Or"} {
		if a, ok := tagged(n, fn); ok {
			all := fn == "And"
			for _, c := range a.Content {
				v, err := w.boolean(c)
				if err != nil {
					return false, err
				}
				if fn == "And" {
					all = all && v
				} else {
					all = all || v
				}
			}
			return all, nil
		}
	}
	return false, fmt.Errorf("line %d: not a condition", n.Line)
}

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

// eval resolves n to a string, []any, map[string]any or noValue{}.
func (w *world) eval(n *yaml.Node) (any, error) {
	if n.Kind == yaml.AliasNode {
		return w.eval(n.Alias)
	}
	if a, ok := tagged(n, "Ref"); ok {
		return w.ref(a.Value)
	}
	if id, attr := refTarget(n); id != "" {
		return w.att(id, attr)
	}
	if a, ok := tagged(n, "Sub"); ok {
		return w.sub(a)
	}
	if a, ok := tagged(n, "If"); ok {
		if a.Kind != yaml.SequenceNode || len(a.Content) != 3 {
			return nil, fmt.Errorf("line %d: !If needs [condition, then, else]", n.Line)
		}
		c, err := w.condition(a.Content[0].Value)
		if err != nil {
			return nil, err
		}
		if c {
			return w.eval(a.Content[1])
		}
		return w.eval(a.Content[2])
	}
	if a, ok := tagged(n, "Select"); ok {
		if a.Kind != yaml.SequenceNode || len(a.Content) != 2 {
			return nil, fmt.Errorf("line %d: !Select needs [index, list]", n.Line)
		}
		i, err := w.eval(a.Content[0])
		if err != nil {
			return nil, err
		}
		list, err := w.eval(a.Content[1])
		if err != nil {
			return nil, err
		}
		items, _ := list.([]any)
		k, err := strconv.Atoi(fmt.Sprint(i))
		if err != nil || k < 0 || k >= len(items) {
			return nil, fmt.Errorf("line %d: !Select index %v out of %v", n.Line, i, list)
		}
		return items[k], nil
	}
	if a, ok := tagged(n, "Split"); ok {
		if a.Kind != yaml.SequenceNode || len(a.Content) != 2 {
			return nil, fmt.Errorf("line %d: !Split needs [delimiter, string]", n.Line)
		}
		v, err := w.eval(a.Content[1])
		if err != nil {
			return nil, err
		}
		var out []any
		for _, p := range strings.Split(fmt.Sprint(v), a.Content[0].Value) {
			out = append(out, p)
		}
		return out, nil
	}
	if a, ok := tagged(n, "Join"); ok {
		if a.Kind != yaml.SequenceNode || len(a.Content) != 2 {
			return nil, fmt.Errorf("line %d: !Join needs [delimiter, list]", n.Line)
		}
		list, err := w.eval(a.Content[1])
		if err != nil {
			return nil, err
		}
		return strings.Join(strs(list), a.Content[0].Value), nil
	}
	if a, ok := tagged(n, "FindInMap"); ok {
		if a.Kind != yaml.SequenceNode || len(a.Content) != 3 {
			return nil, fmt.Errorf("line %d: !FindInMap needs three arguments", n.Line)
		}
		var k [3]string
		for i, c := range a.Content {
			v, err := w.eval(c)
			if err != nil {
				return nil, err
			}
			k[i] = fmt.Sprint(v)
		}
		v := get(w.tp.root, "Mappings", k[0], k[1], k[2])
		if v == nil {
			return nil, fmt.Errorf("line %d: no mapping %s/%s/%s", n.Line, k[0], k[1], k[2])
		}
		return w.eval(v)
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return nil, fmt.Errorf("line %d: intrinsic %s is not modelled by the test", n.Line, n.Tag)
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value, nil
	case yaml.SequenceNode:
		out := []any{}
		for _, c := range n.Content {
			v, err := w.eval(c)
			if err != nil {
				return nil, err
			}
			if _, skip := v.(noValue); !skip {
				out = append(out, v)
			}
		}
		return out, nil
	case yaml.MappingNode:
		out := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := w.eval(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			if _, skip := v.(noValue); !skip {
				out[n.Content[i].Value] = v
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

func (w *world) sub(a *yaml.Node) (any, error) {
	s, vars := a, map[string]any{}
	if a.Kind == yaml.SequenceNode {
		if len(a.Content) != 2 {
			return nil, fmt.Errorf("line %d: !Sub needs a string or [string, variables]", a.Line)
		}
		s = a.Content[0]
		m, err := w.eval(a.Content[1])
		if err != nil {
			return nil, err
		}
		vars, _ = m.(map[string]any)
	}
	var firstErr error
	out := subVar.ReplaceAllStringFunc(s.Value, func(m string) string {
		name := m[2 : len(m)-1]
		if strings.HasPrefix(name, "!") {
			return "${" + name[1:] + "}"
		}
		if v, ok := vars[name]; ok {
			return fmt.Sprint(v)
		}
		var v any
		var err error
		if id, attr, ok := strings.Cut(name, "."); ok {
			v, err = w.att(id, attr)
		} else {
			v, err = w.ref(name)
		}
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("line %d: !Sub %s", s.Line, err)
		}
		return fmt.Sprint(v)
	})
	return out, firstErr
}

// strs turns a string or list value into a list of strings.
func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}

// env returns a function's environment variables (Globals merged with its
// own) as nodes.
func (tp *template) env(id string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	for _, src := range []*yaml.Node{get(tp.root, "Globals", "Function", "Environment", "Variables"), get(tp.resource(id), "Properties", "Environment", "Variables")} {
		for i := 0; src != nil && i+1 < len(src.Content); i += 2 {
			out[src.Content[i].Value] = src.Content[i+1]
		}
	}
	return out
}

// functions returns the logical ids of the template's functions, sorted.
func (tp *template) functions() []string {
	ids := tp.resourcesOfType("AWS::Serverless::Function")
	slices.Sort(ids)
	return ids
}

// ruleFailures evaluates the Rules section: the AssertDescription of every
// assertion CloudFormation would refuse the parameters with.
func (w *world) ruleFailures() ([]string, error) {
	rules := get(w.tp.root, "Rules")
	var out []string
	for _, name := range keys(rules) {
		r := get(rules, name)
		if c := get(r, "RuleCondition"); c != nil {
			on, err := w.boolean(c)
			if err != nil {
				return nil, fmt.Errorf("rule %s: %v", name, err)
			}
			if !on {
				continue
			}
		}
		for _, a := range get(r, "Assertions").Content {
			ok, err := w.boolean(get(a, "Assert"))
			if err != nil {
				return nil, fmt.Errorf("rule %s: %v", name, err)
			}
			if !ok {
				out = append(out, get(a, "AssertDescription").Value)
			}
		}
	}
	return out, nil
}
