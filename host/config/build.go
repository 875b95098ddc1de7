package config

import (
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/v2"
)

// build merges the layers with koanf, drops invalid values, fills the
// per-entry defaults, orders the plugins and decodes the result.
func (l *loader) build() (*Config, error) {
	k := koanf.New(".")
	for _, lay := range l.layers {
		if err := k.Load(confmap.Provider(lay.tree, ""), nil); err != nil {
			return nil, err
		}
	}
	raw := k.Raw()
	l.strip(schema, raw, nil)

	if models, ok := raw["models"].(map[string]any); ok {
		for _, e := range models {
			if m, ok := e.(map[string]any); ok {
				provider, _ := m["provider"].(string)
				fill(m, routeTemplate(provider))
			}
		}
	}
	if m, ok := raw["mcp"].(map[string]any); ok {
		if servers, ok := m["servers"].(map[string]any); ok {
			for _, e := range servers {
				if sm, ok := e.(map[string]any); ok {
					fill(sm, mcpTemplate())
				}
			}
		}
	}
	prompt, _ := raw["prompt"].(map[string]any)
	fillSections(prompt)
	if per, ok := prompt["perModel"].(map[string]any); ok {
		for _, o := range per {
			if m, ok := o.(map[string]any); ok {
				fillSections(m)
			}
		}
	}
	pm, _ := raw["plugins"].(map[string]any)
	var order []string
	for _, b := range builtins {
		if _, ok := pm[b.name]; ok {
			order = append(order, b.name)
		}
	}
	for _, lay := range l.layers {
		for _, name := range lay.pluginOrder {
			if _, ok := pm[name]; ok && !slices.Contains(order, name) {
				order = append(order, name)
			}
		}
	}
	list := make([]any, len(order))
	l.pluginPos = map[string]int{}
	for i, name := range order {
		m := pm[name].(map[string]any)
		fill(m, pluginTemplate(name))
		list[i] = m
		l.pluginPos[name] = i
	}
	raw["plugins"] = list

	fk := koanf.New(".")
	if err := fk.Load(confmap.Provider(raw, ""), nil); err != nil {
		return nil, err
	}
	var cfg Config
	if err := fk.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func fill(m, template map[string]any) {
	for k, v := range template {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
}

func fillSections(m map[string]any) {
	fillList(m, "sections")
	fillList(m, "data")
}

func fillList(m map[string]any, name string) {
	if s, ok := m[name].([]any); ok {
		for i, e := range s {
			sm, ok := e.(map[string]any)
			if !ok {
				sm = map[string]any{}
				s[i] = sm
			}
			fill(sm, sectionTemplate())
		}
	}
}

// strip removes invalid values from a merged tree, remembering their keys.
func (l *loader) strip(n *node, m map[string]any, id path) {
	for _, k := range sortedKeys(m) {
		v := m[k]
		kid := id.with(k)
		if _, bad := v.(invalid); bad {
			delete(m, k)
			l.bad[kid.String()] = true
			continue
		}
		c := n.elem
		if n.kind == kindStruct {
			c = n.field(k)
		}
		if c == nil {
			continue
		}
		switch {
		case len(id) == 0 && k == "plugins":
			pm, ok := v.(map[string]any)
			if !ok {
				delete(m, k)
				continue
			}
			l.strip(&node{kind: kindMap, elem: c.elem}, pm, kid)
		case c.kind == kindStruct || c.kind == kindMap:
			if cm, ok := v.(map[string]any); ok {
				l.strip(c, cm, kid)
			}
		case c.kind == kindList:
			s, _ := v.([]any)
			for i, e := range s {
				eid := kid.with(index(i))
				if c.elem.leaf() { // a list of scalars (args)
					if _, bad := e.(invalid); bad {
						l.bad[eid.String()] = true
						s[i] = ""
					}
					continue
				}
				if em, ok := e.(map[string]any); ok {
					l.strip(c.elem, em, eid)
				} else {
					l.bad[eid.String()] = true
					s[i] = map[string]any{}
				}
			}
		}
	}
}

// isBad reports whether id or a key above it failed its type check.
func (l *loader) isBad(id path) bool {
	for i := len(id); i > 0; i-- {
		if l.bad[id[:i].String()] {
			return true
		}
	}
	return false
}

// defines reports whether the layer sets id (a list counts for all its
// positions).
func (lay *layer) defines(id path) bool {
	var cur any = lay.tree
	for _, s := range id {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[s]
			if !ok {
				return false
			}
			cur = v
		case []any:
			return true
		default:
			return false
		}
	}
	_, bad := cur.(invalid)
	return cur != nil && !bad
}

// effective renders id as the effective key: plugins by position.
func (l *loader) effective(id path) string {
	if len(id) >= 2 && id[0] == "plugins" {
		if i, ok := l.pluginPos[id[1]]; ok {
			return path{"plugins", index(i)}.with(id[2:]...).String()
		}
	}
	return id.String()
}

// sourceOf finds the highest layer that sets id; default when none.
func (l *loader) sourceOf(id path) Source {
	for i := len(l.layers) - 1; i >= 0; i-- {
		if l.layers[i].defines(id) {
			return l.layerSource(l.layers[i], id)
		}
	}
	return Source{Kind: FromDefault}
}

// blame is the source to name in a problem with id: the source of its
// value, or when no source sets it (a missing field), the source of the
// nearest entry above it, so that a file's entry lacking a required key
// is reported in that file.
func (l *loader) blame(id path) Source {
	for n := len(id); n > 0; n-- {
		for i := len(l.layers) - 1; i >= 0; i-- {
			if l.layers[i].defines(id[:n]) {
				return l.layerSource(l.layers[i], id)
			}
		}
	}
	return Source{Kind: FromDefault}
}

// layerSource describes the layer as the source of id.
func (l *loader) layerSource(lay *layer, id path) Source {
	src := lay.src
	switch src.Kind {
	case FromEnv, FromFlag:
		src.Name = lay.nameFor(id)
	case FromFile:
		if len(id) >= 2 && id[0] == "plugins" {
			if fi, ok := lay.pluginIndex[id[1]]; ok {
				if local := (path{"plugins", index(fi)}.with(id[2:]...)).String(); local != l.effective(id) {
					src.Key = local
				}
			}
		}
	}
	return src
}

// nameFor is the variable or flag that set id, or when id is a missing
// field of an entry the layer created, one that set a key of that entry.
func (lay *layer) nameFor(id path) string {
	for n := len(id); n > 0; n-- {
		prefix := id[:n].String()
		for _, k := range sortedKeys(lay.names) {
			if k == prefix || strings.HasPrefix(k, prefix+".") {
				return lay.names[k]
			}
		}
	}
	return ""
}

// dirOf is the base of relative paths set at id: the directory of the
// file that set it, else the working directory.
func (l *loader) dirOf(id path) string {
	for i := len(l.layers) - 1; i >= 0; i-- {
		if l.layers[i].defines(id) {
			return l.layers[i].dir
		}
	}
	return l.opts.Dir
}

// entries lists the leaves of cfg with their sources.
func (l *loader) entries(cfg *Config) []Entry {
	var out []Entry
	var walk func(n *node, v reflect.Value, id path)
	walk = func(n *node, v reflect.Value, id path) {
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		switch n.kind {
		case kindStruct:
			t := v.Type()
			i := 0
			for j := range t.NumField() {
				if tag := t.Field(j).Tag.Get("koanf"); tag == "" || tag == "-" {
					continue
				}
				f := n.fields[i]
				i++
				if t == reflect.TypeFor[Section]() {
					if (f.name == "text" && v.FieldByName("File").String() != "") ||
						(f.name == "file" && v.Field(j).String() == "") {
						continue
					}
				}
				walk(f.node, v.Field(j), id.with(f.name))
			}
		case kindMap:
			keys := v.MapKeys()
			names := make([]string, len(keys))
			for i, k := range keys {
				names[i] = k.String()
			}
			slices.Sort(names)
			for _, name := range names {
				walk(n.elem, v.MapIndex(reflect.ValueOf(name)), id.with(name))
			}
		case kindList:
			for i := range v.Len() {
				e := v.Index(i)
				if len(id) == 1 && id[0] == "plugins" {
					walk(n.elem, e, id.with(e.FieldByName("Name").String()))
				} else {
					walk(n.elem, e, id.with(index(i)))
				}
			}
		default:
			out = append(out, Entry{Key: l.effective(id), Value: leafValue(v), Source: l.sourceOf(id)})
		}
	}
	walk(schema, reflect.ValueOf(cfg), nil)
	return out
}

func leafValue(v reflect.Value) any {
	switch v.Type() {
	case durationType:
		return time.Duration(v.Int()).String()
	case objectType:
		return jsontext.Value(v.Bytes())
	}
	return v.Interface()
}
