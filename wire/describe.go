package wire

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of handler descriptions (docs/protocol.md section 8.11).
const (
	MaxDescriptionBytes     = 4096  // one description's values together
	MaxExecutorDescBytes    = 65536 // one executor's descriptions together
	MaxDescriptionNameLen   = 128
	MaxDescriptionVersion   = 64
	maxDescriptionIndex     = 1023
	describePrefix          = "describe."
	argRequired             = "required"
	argPatternSuffix        = "*"
	argKindsForErrorMessage = "string, int, float, bool, duration, json"
)

// Arg kinds of an argument schema.
const (
	ArgString   = "string"
	ArgInt      = "int"
	ArgFloat    = "float"
	ArgBool     = "bool"
	ArgDuration = "duration"
	ArgJSON     = "json"
)

// Arg is one entry of a handler's argument schema. A Name ending in "*"
// matches every arg that begins with the rest of it.
type Arg struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Required bool   `json:"required,omitempty"`
}

// Description is what an executor says of one task type's handler.
// Empty fields are not sent; empty Args says nothing of the args.
type Description struct {
	Type      string
	Name      string
	Version   string
	Args      []Arg
	TimeoutMs uint64
}

// Bytes is what a description counts against its bounds: its values.
func (d Description) Bytes() int {
	return len(d.Type) + len(d.Name) + len(d.Version) + len(FormatArgs(d.Args)) + 20
}

// Check reports the first way d breaks section 8.11's rules.
func (d Description) Check() error {
	switch {
	case d.Type == "":
		return fmt.Errorf("a description names no task type")
	case len(d.Name) > MaxDescriptionNameLen || !utf8.ValidString(d.Name):
		return fmt.Errorf("type %s: handler name over %d bytes or not UTF-8", strconv.Quote(clip(d.Type)), MaxDescriptionNameLen)
	case len(d.Version) > MaxDescriptionVersion || !utf8.ValidString(d.Version):
		return fmt.Errorf("type %s: version over %d bytes or not UTF-8", strconv.Quote(clip(d.Type)), MaxDescriptionVersion)
	case d.Bytes() > MaxDescriptionBytes:
		return fmt.Errorf("type %s: description of %d bytes, over %d", strconv.Quote(clip(d.Type)), d.Bytes(), MaxDescriptionBytes)
	}
	seen := make(map[string]bool, len(d.Args))
	for _, a := range d.Args {
		if err := a.check(); err != nil {
			return fmt.Errorf("type %s: %w", strconv.Quote(clip(d.Type)), err)
		}
		if seen[a.Name] {
			return fmt.Errorf("type %s: arg %s described twice", strconv.Quote(clip(d.Type)), a.Name)
		}
		seen[a.Name] = true
	}
	return nil
}

func (a Arg) check() error {
	name, pattern := strings.CutSuffix(a.Name, argPatternSuffix)
	if !(pattern && name == "") && !ValidKey(PrefixArg+name) {
		return fmt.Errorf("arg name %q: want a-z 0-9 _ . - (the part after arg.), optionally ending in *", a.Name)
	}
	switch a.Kind {
	case ArgString, ArgInt, ArgFloat, ArgBool, ArgDuration, ArgJSON:
	default:
		return fmt.Errorf("arg %s: kind %q is not one of %s", a.Name, a.Kind, argKindsForErrorMessage)
	}
	return nil
}

// FormatArgs writes a schema as its wire list: name:kind[:required].
func FormatArgs(args []Arg) string {
	var sb strings.Builder
	for i, a := range args {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(a.Name)
		sb.WriteByte(':')
		sb.WriteString(a.Kind)
		if a.Required {
			sb.WriteString(":" + argRequired)
		}
	}
	return sb.String()
}

// ParseArgs reads a schema's wire list; an empty one is no schema.
func ParseArgs(s string) ([]Arg, error) {
	if s == "" {
		return nil, nil
	}
	items, ok := SplitList(s)
	if !ok {
		return nil, fmt.Errorf("bad list %q", clip(s))
	}
	args := make([]Arg, 0, len(items))
	for _, it := range items {
		parts := strings.Split(it, ":")
		a := Arg{Name: parts[0]}
		switch {
		case len(parts) == 2:
		case len(parts) == 3 && parts[2] == argRequired:
			a.Required = true
		default:
			return nil, fmt.Errorf("arg %q: want name:kind or name:kind:required", clip(it))
		}
		a.Kind = parts[1]
		if err := a.check(); err != nil {
			return nil, err
		}
		args = append(args, a)
	}
	return args, nil
}

// ArgProblem is one way a task's args miss their schema.
type ArgProblem struct {
	Arg     string
	Reason  string
	Unknown bool // an arg the schema does not name: advice, not an error
}

func (p ArgProblem) String() string { return "arg " + p.Arg + ": " + p.Reason }

// CheckArgs compares a task's args with a schema: required args missing,
// values that do not parse as their kind, and args the schema does not
// name. An empty schema finds nothing. Problems come in a stable order.
func CheckArgs(schema []Arg, args map[string]string) []ArgProblem {
	if len(schema) == 0 {
		return nil
	}
	var out []ArgProblem
	for _, a := range schema {
		if !a.Required || strings.HasSuffix(a.Name, argPatternSuffix) {
			continue
		}
		if _, ok := args[a.Name]; !ok {
			out = append(out, ArgProblem{Arg: a.Name, Reason: "required, missing"})
		}
	}
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		a, ok := ArgFor(schema, k)
		if !ok {
			out = append(out, ArgProblem{Arg: k, Reason: "not in the handler's schema", Unknown: true})
			continue
		}
		if err := parseKind(a.Kind, args[k]); err != nil {
			out = append(out, ArgProblem{Arg: k, Reason: "want " + a.Kind + ": " + err.Error()})
		}
	}
	return out
}

// RuntimeChecks reports whether a task's args can fail schema: some arg
// is required or of a kind other than string (unknown args never fail).
func RuntimeChecks(schema []Arg) bool {
	for _, a := range schema {
		if a.Required || a.Kind != ArgString {
			return true
		}
	}
	return false
}

// ArgFor finds the schema entry of arg name: its own, else the longest
// pattern that matches it.
func ArgFor(schema []Arg, name string) (Arg, bool) {
	var best Arg
	found := false
	for _, a := range schema {
		if a.Name == name {
			return a, true
		}
		if p, ok := strings.CutSuffix(a.Name, argPatternSuffix); ok && strings.HasPrefix(name, p) &&
			(!found || len(a.Name) > len(best.Name)) {
			best, found = a, true
		}
	}
	return best, found
}

func parseKind(kind, v string) error {
	var err error
	switch kind {
	case ArgInt:
		_, err = strconv.ParseInt(v, 10, 64)
	case ArgFloat:
		_, err = strconv.ParseFloat(v, 64)
	case ArgBool:
		if v != "true" && v != "false" {
			err = fmt.Errorf("%q is not true or false", clip(v))
		}
	case ArgDuration:
		_, err = time.ParseDuration(v)
	case ArgJSON:
		if !json.Valid([]byte(v)) {
			err = fmt.Errorf("not one JSON value")
		}
	}
	if ne, ok := err.(*strconv.NumError); ok {
		err = fmt.Errorf("%q: %v", clip(v), ne.Err)
	}
	return err
}

// AppendDescription writes d's keys under index i.
func AppendDescription(b *Builder, i int, d Description) {
	p := describePrefix + strconv.Itoa(i) + "."
	b.Str(p+"type", d.Type)
	if d.Name != "" {
		b.Str(p+"name", d.Name)
	}
	if d.Version != "" {
		b.Str(p+"version", d.Version)
	}
	if len(d.Args) > 0 {
		b.Str(p+"args", FormatArgs(d.Args))
	}
	if d.TimeoutMs > 0 {
		b.Uint(p+"timeout_ms", d.TimeoutMs)
	}
}

// DescriptionKeys is how many keys AppendDescription writes for d.
func DescriptionKeys(d Description) int {
	n := 1
	for _, set := range []bool{d.Name != "", d.Version != "", len(d.Args) > 0, d.TimeoutMs > 0} {
		if set {
			n++
		}
	}
	return n
}

// ParseDescriptions reads the describe.<i>.* keys of m, in index order,
// each checked. Strings point into m: clone what is kept. A key of the
// group it does not know is ignored, as section 2 says of unknown keys.
func ParseDescriptions(m *Message) ([]Description, error) {
	var byIdx map[int]*Description
	var order []int
	for _, f := range m.Fields {
		rest, ok := strings.CutPrefix(f.Key, describePrefix)
		if !ok {
			continue
		}
		idx, field, _ := strings.Cut(rest, ".")
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 || i > maxDescriptionIndex || strconv.Itoa(i) != idx {
			return nil, &ValueError{Key: f.Key, Reason: "want describe.<0 to 1023>.<field>"}
		}
		if byIdx == nil {
			byIdx = make(map[int]*Description)
		}
		d := byIdx[i]
		if d == nil {
			d = &Description{}
			byIdx[i] = d
			order = append(order, i)
		}
		switch field {
		case "type":
			d.Type = f.Value
		case "name":
			d.Name = f.Value
		case "version":
			d.Version = f.Value
		case "args":
			if d.Args, err = ParseArgs(f.Value); err != nil {
				return nil, &ValueError{Key: f.Key, Reason: err.Error()}
			}
		case "timeout_ms":
			if d.TimeoutMs, err = UintValue(f.Key, f.Value); err != nil {
				return nil, err
			}
			if d.TimeoutMs == 0 {
				return nil, &ValueError{Key: f.Key, Reason: "must be 1 or more"}
			}
		}
	}
	slices.Sort(order)
	out := make([]Description, 0, len(order))
	for _, i := range order {
		d := *byIdx[i]
		if err := d.Check(); err != nil {
			return nil, &ValueError{Key: describePrefix + strconv.Itoa(i), Reason: err.Error()}
		}
		out = append(out, d)
	}
	return out, nil
}
