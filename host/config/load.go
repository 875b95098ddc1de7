package config

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
)

// FileName is the configuration file searched for.
const FileName = "weir.yaml"

// EnvPrefix starts every configuration environment variable.
const EnvPrefix = "WEIR_"

// Options say where Load looks.
type Options struct {
	// File is an explicit configuration file; it must exist. When empty,
	// Load searches Dir/weir.yaml, then UserConfigDir/weir/weir.yaml, and
	// reads the first that exists (none is fine).
	File string
	// Dir is the working directory (default: os.Getwd()).
	Dir string
	// UserConfigDir replaces os.UserConfigDir() in the search.
	UserConfigDir string
	// Env is the environment as "NAME=value" entries; nil reads
	// os.Environ(). Pass an empty, non-nil slice for none.
	Env []string
	// Flags are the command-line flags the user set explicitly, the
	// highest source.
	Flags []Flag
}

// Flag is one explicitly set command-line flag and the key it sets.
type Flag struct {
	// Name is the flag's name without dashes ("max-tokens"); Sources
	// reports it.
	Name string
	// Key is the key path it sets: "log.level", "models.deepseek.baseURL",
	// "plugins.token-meter.enabled", or "route.FIELD" for a field of the
	// selected route (the one named by "model" after every source,
	// this flag layer included).
	Key string
	// Value is a string (parsed for the key's kind, as environment
	// values are), or an int, int64, bool or time.Duration.
	Value any
}

// FlagsFrom returns the flags of fs that were set on the command line and
// appear in keys (flag name → key path), for Options.Flags.
func FlagsFrom(fs *flag.FlagSet, keys map[string]string) []Flag {
	var out []Flag
	fs.Visit(func(f *flag.Flag) {
		key, ok := keys[f.Name]
		if !ok {
			return
		}
		var v any = f.Value.String()
		if g, ok := f.Value.(flag.Getter); ok {
			v = g.Get()
		}
		out = append(out, Flag{Name: f.Name, Key: key, Value: v})
	})
	return out
}

// layer is one source's contribution: a tree of normalized values (maps,
// lists, string, int64, bool, time.Duration, JSON objects, invalid) in
// which plugins are keyed by name so that sources merge entry by entry.
type layer struct {
	src  Source
	tree map[string]any
	dir  string // base of relative paths the layer sets
	// pluginIndex is a file's position of each plugin entry.
	pluginIndex map[string]int
	pluginOrder []string
	// names are the variable or flag names that set each key.
	names map[string]string
}

type loader struct {
	opts   Options
	errs   Errors
	layers []*layer
	// bad holds the keys whose value failed its type check.
	bad map[string]bool
	// pluginPos is each plugin's effective index.
	pluginPos map[string]int
	sources   *Sources
}

// Load reads the configuration: defaults, then the file, then WEIR_
// environment variables, then flags, each source overriding the ones
// before it key by key. It validates the result and returns every problem
// found as Errors. Sources tells which source set each leaf key.
func Load(opts Options) (*Config, *Sources, error) {
	if opts.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, nil, fmt.Errorf("config: working directory: %w", err)
		}
		opts.Dir = wd
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	l := &loader{opts: opts, bad: map[string]bool{}, sources: &Sources{}}
	l.defaults()
	l.file()
	l.env()
	l.flags()
	cfg, err := l.build()
	if err != nil {
		return nil, nil, err
	}
	l.validate(cfg)
	if len(l.errs) > 0 {
		return nil, nil, l.errs
	}
	l.sources.entries = l.entries(cfg)
	l.sources.index = map[string]int{}
	for i, e := range l.sources.entries {
		l.sources.index[e.Key] = i
	}
	return cfg, l.sources, nil
}

func (l *loader) add(p *Problem) { l.errs = append(l.errs, p) }

func (l *loader) defaults() {
	tree := encode(schema, reflectOf(Default()), true).(map[string]any)
	l.layers = append(l.layers, &layer{src: Source{Kind: FromDefault}, tree: tree, dir: l.opts.Dir})
}

// file finds, parses and checks the configuration file.
func (l *loader) file() {
	path := l.opts.File
	if path != "" {
		if !filepath.IsAbs(path) {
			path = filepath.Join(l.opts.Dir, path)
		}
		if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
			reason := "the configuration file does not exist; check the path given"
			if err == nil {
				reason = "the configuration file is not a regular file; give the path of a YAML file"
			} else if !errors.Is(err, fs.ErrNotExist) {
				reason = "the configuration file cannot be read: " + err.Error()
			}
			l.add(&Problem{Reason: reason, Source: Source{Kind: FromFile, Name: path}})
			return
		}
	} else {
		cands := []string{filepath.Join(l.opts.Dir, FileName)}
		ucd := l.opts.UserConfigDir
		if ucd == "" {
			ucd, _ = os.UserConfigDir()
		}
		if ucd != "" {
			cands = append(cands, filepath.Join(ucd, "weir", FileName))
		}
		l.sources.Searched = cands
		for _, c := range cands {
			st, err := os.Stat(c)
			if err == nil && st.Mode().IsRegular() {
				path = c
				break
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				l.add(&Problem{Reason: "cannot be read: " + err.Error(), Source: Source{Kind: FromFile, Name: c}})
				return
			}
		}
		if path == "" {
			return
		}
	}
	l.sources.File = path
	lay := &layer{src: Source{Kind: FromFile, Name: path}, dir: filepath.Dir(path), pluginIndex: map[string]int{}}
	// A file that exists but cannot be opened is a permission problem, not
	// a syntax one: say so before the parser would call it invalid YAML.
	f, err := os.Open(path)
	if err != nil {
		l.add(&Problem{Reason: unreadable(err), Source: lay.src})
		return
	}
	f.Close()
	k := koanf.New(".")
	if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
		msg := strings.Join(strings.Fields(err.Error()), " ")
		if strings.Contains(msg, "into map[string]") {
			msg += " (the top level must be a mapping of keys such as model:, models:)"
		}
		l.add(&Problem{Reason: "is not valid YAML: " + msg + "; fix the syntax", Source: lay.src})
		return
	}
	tree, ok := l.check(schema, k.Raw(), nil, lay)
	if !ok {
		return
	}
	m, isMap := tree.(map[string]any)
	if !isMap {
		return
	}
	if p, ok := m["plugins"]; ok {
		m["plugins"] = l.byName(p, lay)
	}
	lay.tree = m
	l.layers = append(l.layers, lay)
}

// check normalizes a decoded YAML value of the file against its schema
// node, reporting unknown keys and wrong types with their path in the
// file. A wrong value becomes invalid; a null container is left out.
func (l *loader) check(n *node, v any, p path, lay *layer) (any, bool) {
	fail := func(reason string) (any, bool) {
		l.add(&Problem{Key: p.String(), Reason: reason, Source: lay.src})
		return invalid{}, true
	}
	switch n.kind {
	case kindStruct, kindMap:
		if v == nil {
			return nil, false
		}
		m, ok := v.(map[string]any)
		if !ok {
			return fail("must be " + want(n) + ", got " + got(v))
		}
		out := map[string]any{}
		for _, k := range sortedKeys(m) {
			c := n.elem
			if n.kind == kindStruct {
				if c = n.field(k); c == nil {
					l.add(&Problem{Key: p.with(k).String(), Source: lay.src,
						Reason: "unknown key" + suggestion(k, n.names()) + "; the keys here are " + strings.Join(n.names(), ", ")})
					continue
				}
			} else if !nameRE.MatchString(k) && !(p.String() == "tools.policy" && policyPattern(k)) {
				l.add(&Problem{Key: p.with(k).String(), Source: lay.src,
					Reason: "is not a valid name: use letters, digits, '-' and '_' (no dots or spaces)"})
				continue
			}
			if cv, ok := l.check(c, m[k], p.with(k), lay); ok {
				out[k] = cv
			}
		}
		return out, true
	case kindList:
		if v == nil {
			return nil, false
		}
		s, ok := v.([]any)
		if !ok {
			return fail("must be a list (each entry starting with \"- \"), got " + got(v))
		}
		out := make([]any, 0, len(s))
		for i, e := range s {
			ep := p.with(index(i))
			if e == nil {
				l.add(&Problem{Key: ep.String(), Source: lay.src, Reason: "is empty; remove the entry or give its keys"})
				out = append(out, invalid{})
				continue
			}
			cv, _ := l.check(n.elem, e, ep, lay)
			out = append(out, cv)
		}
		return out, true
	}
	if v == nil {
		return fail("has no value; give " + want(n) + " or remove the key")
	}
	x, reason := scalar(n, v)
	if reason != "" {
		return fail(reason)
	}
	return x, true
}

// byName turns a file's checked plugins list into entries keyed by name.
func (l *loader) byName(v any, lay *layer) any {
	s, ok := v.([]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for i, e := range s {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		key := path{"plugins", index(i), "name"}.String()
		fail := func(reason string) { l.add(&Problem{Key: key, Reason: reason, Source: lay.src}) }
		switch name := m["name"].(type) {
		case invalid:
		case nil:
			fail("is required: give each plugin a name (" + oneOf(builtinNames()) + " for a first-party one, or your own)")
		case string:
			switch first, dup := lay.pluginIndex[name]; {
			case name == "":
				fail("is required: give each plugin a name (" + oneOf(builtinNames()) + " for a first-party one, or your own)")
			case !nameRE.MatchString(name):
				fail(strconv.Quote(name) + " is not a valid plugin name: use letters, digits, '-' and '_'")
			case dup:
				fail(strconv.Quote(name) + " is listed twice (also plugins[" + strconv.Itoa(first) + "]); merge the two entries")
			default:
				out[name] = m
				lay.pluginIndex[name] = i
				lay.pluginOrder = append(lay.pluginOrder, name)
			}
		}
	}
	return out
}

func builtinNames() []string {
	out := make([]string, len(builtins))
	for i, b := range builtins {
		out[i] = b.name
	}
	return out
}

// env reads WEIR_ variables through koanf's env provider.
func (l *loader) env() {
	environ := slices.Clone(l.opts.Env)
	sort.Strings(environ)
	lay := &layer{src: Source{Kind: FromEnv}, dir: l.opts.Dir, names: map[string]string{}}
	k := koanf.New(".")
	err := k.Load(env.Provider(".", env.Opt{Prefix: EnvPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, val string) (string, any) {
			if val == "" {
				return "", nil
			}
			id, n, ours, reason := l.envKey(name)
			if !ours {
				return "", nil
			}
			if reason != "" {
				l.add(&Problem{Key: name, Reason: reason})
				return "", nil
			}
			key := id.String()
			src := Source{Kind: FromEnv, Name: name}
			if other, dup := lay.names[key]; dup {
				l.add(&Problem{Key: key, Source: src, Reason: "is also set by $" + other + "; keep one of the two variables"})
				return "", nil
			}
			lay.names[key] = name
			v, reason := parseText(n, val)
			if reason != "" {
				l.add(&Problem{Key: key, Source: src, Reason: reason})
				return key, invalid{}
			}
			return key, v
		}}), nil)
	if err != nil {
		l.add(&Problem{Reason: "cannot read the environment: " + err.Error()})
		return
	}
	lay.tree = k.Raw()
	l.layers = append(l.layers, lay)
}

// envKey resolves an environment variable to a key path. Below WEIR_,
// "__" always separates levels; within a part, "_" separates fixed keys
// too, and key names match ignoring case. A map entry's name (a route, a
// plugin) runs to the next "__". ours is false when the first word names
// no top-level key: such variables belong to other parts of Weir.
func (l *loader) envKey(name string) (id path, n *node, ours bool, reason string) {
	rest := strings.TrimPrefix(name, EnvPrefix)
	if rest == "" {
		return nil, nil, false, ""
	}
	parts := strings.Split(rest, "__")
	n = schema
	var words []string
	for next := 0; ; {
		if len(words) == 0 {
			if next == len(parts) {
				break
			}
			words = strings.Split(parts[next], "_")
			next++
			if slices.Contains(words, "") {
				return id, n, true, "has an empty part (a stray underscore); write levels as WEIR_A__B or WEIR_A_B"
			}
		}
		switch n.kind {
		case kindStruct:
			var fname string
			var fn *node
			used := 0
			for j := 1; j <= len(words) && fn == nil; j++ {
				fname, fn = n.fieldFold(strings.Join(words[:j], ""))
				used = j
			}
			if fn == nil {
				if len(id) == 0 {
					return nil, nil, false, ""
				}
				return id, n, true, "matches no key under " + id.String() + suggestion(strings.Join(words, ""), n.names()) +
					"; the keys there are " + strings.Join(n.names(), ", ")
			}
			id, n, words = id.with(fname), fn, words[used:]
		case kindMap:
			id, n, words = id.with(l.existing(id, strings.Join(words, "_"))), n.elem, nil
		case kindList:
			if id.String() != "plugins" {
				return id, n, true, id.String() + " is a list; set it in the configuration file"
			}
			want := strings.Join(words, "_")
			pname := l.existing(id, want)
			if !l.hasPlugin(pname) {
				return id, n, true, "no plugin named " + strconv.Quote(strings.ToLower(want)) + " is configured (plugins: " +
					strings.Join(l.pluginNames(), ", ") + "); add it in the configuration file first"
			}
			id, n, words = id.with(pname), n.elem, nil
		default:
			return id, n, true, "goes below " + id.String() + ", which is a single value; remove the extra part"
		}
	}
	switch n.kind {
	case kindList:
		return id, n, true, id.String() + " is a list; set it in the configuration file"
	case kindMap:
		return id, n, true, id.String() + " holds named entries; name an entry and a key, e.g. " +
			EnvPrefix + "MODELS__DEEPSEEK__BASEURL"
	case kindStruct:
		return id, n, true, or(id.String(), "the configuration") + " is a group of keys, not a value; name one of them (" +
			strings.Join(n.names(), ", ") + ")"
	}
	return id, n, true, ""
}

// existing returns the name of an entry under id that the sources so far
// define and that equals want ignoring case and '-' versus '_'; else
// want in lower case.
func (l *loader) existing(id path, want string) string {
	fold := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	for _, lay := range l.layers {
		if m, ok := lookup(lay.tree, id).(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				if fold(k) == fold(want) {
					return k
				}
			}
		}
	}
	return strings.ToLower(want)
}

func (l *loader) hasPlugin(name string) bool { return slices.Contains(l.pluginNames(), name) }

func (l *loader) pluginNames() []string {
	var out []string
	for _, lay := range l.layers {
		if m, ok := lay.tree["plugins"].(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		}
	}
	return out
}

// flags adds the explicitly set flags, loaded through koanf's confmap
// provider.
func (l *loader) flags() {
	if len(l.opts.Flags) == 0 {
		return
	}
	route := ""
	for _, f := range l.opts.Flags {
		if s, ok := f.Value.(string); ok && f.Key == "model" {
			route = s
		}
	}
	if route == "" {
		for i := len(l.layers) - 1; i >= 0 && route == ""; i-- {
			route, _ = l.layers[i].tree["model"].(string)
		}
	}
	lay := &layer{src: Source{Kind: FromFlag}, dir: l.opts.Dir, names: map[string]string{}}
	flat := map[string]any{}
	for _, f := range l.opts.Flags {
		id, n, reason := l.flagKey(f.Key, route)
		if reason != "" {
			l.add(&Problem{Key: f.Key, Reason: reason, Source: Source{Kind: FromFlag, Name: f.Name}})
			continue
		}
		key := id.String()
		src := Source{Kind: FromFlag, Name: f.Name}
		if other, dup := lay.names[key]; dup {
			l.add(&Problem{Key: key, Source: src, Reason: "is also set by flag --" + other + "; give only one of the two"})
			continue
		}
		lay.names[key] = f.Name
		v, reason := flagValue(n, f.Value)
		if reason != "" {
			l.add(&Problem{Key: key, Source: src, Reason: reason})
			v = invalid{}
		}
		flat[key] = v
	}
	k := koanf.New(".")
	if err := k.Load(confmap.Provider(flat, "."), nil); err != nil {
		l.add(&Problem{Reason: "cannot load the flags: " + err.Error()})
		return
	}
	lay.tree = k.Raw()
	l.layers = append(l.layers, lay)
}

// flagKey resolves a flag's key path; "route." stands for the selected
// route's entry.
func (l *loader) flagKey(key, route string) (path, *node, string) {
	segs := strings.Split(key, ".")
	if segs[0] == "route" {
		if route == "" {
			return nil, nil, "no route is selected; set model"
		}
		segs = append([]string{"models", route}, segs[1:]...)
	}
	var id path
	n := schema
	for _, s := range segs {
		switch n.kind {
		case kindStruct:
			c := n.field(s)
			if c == nil {
				return nil, nil, "unknown key " + strconv.Quote(s) + suggestion(s, n.names()) + " under " + or(id.String(), "the top level")
			}
			id, n = id.with(s), c
		case kindMap:
			if !nameRE.MatchString(s) {
				return nil, nil, strconv.Quote(s) + " is not a valid name: use letters, digits, '-' and '_'"
			}
			id, n = id.with(s), n.elem
		case kindList:
			if id.String() != "plugins" || !l.hasPlugin(s) {
				return nil, nil, id.String() + " has no entry named " + strconv.Quote(s)
			}
			id, n = id.with(s), n.elem
		default:
			return nil, nil, "goes below " + id.String() + ", which is a single value"
		}
	}
	if !n.leaf() {
		return nil, nil, "names a group of keys, not a value"
	}
	return id, n, ""
}

func flagValue(n *node, v any) (any, string) {
	switch x := v.(type) {
	case string:
		return parseText(n, x)
	case int:
		v = int64(x)
	case int32:
		v = int64(x)
	case uint:
		v = int64(x)
	case uint64:
		if x > 1<<63-1 {
			return nil, "is too large"
		}
		v = int64(x)
	case float64:
		return scalar(n, x)
	case time.Duration:
		if n.kind != kindDuration {
			return nil, "must be " + want(n) + ", got a duration"
		}
		return x, ""
	}
	return scalar(n, v)
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// unreadable is the reason of a configuration file that exists but could
// not be opened: the cause first, then the fix.
func unreadable(err error) string {
	if errors.Is(err, fs.ErrPermission) {
		return "cannot be read: permission denied; give read access to it (chmod u+r) or name another file with --config"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return "cannot be read: " + err.Error()
}
