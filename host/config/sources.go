package config

import "slices"

// Kind is the kind of a configuration source, lowest first.
type Kind string

// Source kinds, in order of precedence (a later one wins).
const (
	FromDefault Kind = "default"
	FromFile    Kind = "file"
	FromEnv     Kind = "env"
	FromFlag    Kind = "flag"
)

// Source is where a value came from.
type Source struct {
	Kind Kind `json:"kind"`
	// Name is the file path, the environment variable or the flag name
	// (without dashes); empty for defaults.
	Name string `json:"name,omitzero"`
	// Key is the key as the file spells it, when that differs from the
	// effective key (a plugin's position in the file's list).
	Key string `json:"key,omitzero"`
}

// String renders the source for people: "default", the file path (with
// the file's key when it differs), "$WEIR_LOG_LEVEL" or "--max-tokens".
func (s Source) String() string {
	switch s.Kind {
	case FromFile:
		if s.Key != "" {
			return s.Name + " (" + s.Key + ")"
		}
		return s.Name
	case FromEnv:
		return "$" + s.Name
	case FromFlag:
		return "--" + s.Name
	}
	return string(s.Kind)
}

// Entry is one leaf key of the effective configuration.
type Entry struct {
	// Key is the effective key path: "log.level",
	// "models.deepseek.baseURL", "plugins[2].enabled",
	// "prompt.sections[0].text".
	Key string `json:"key"`
	// Value is a string, an int64, a bool, a duration as a string ("2s")
	// or, for plugin configuration, a JSON object.
	Value any `json:"value"`
	// Source is where the value came from.
	Source Source `json:"source"`
}

// Sources tells where every leaf of a loaded configuration came from.
type Sources struct {
	// File is the configuration file read; empty when none.
	File string
	// Searched are the places looked at when no file was given.
	Searched []string

	entries []Entry
	index   map[string]int
}

// Of returns the source of a leaf key (an Entry key).
func (s *Sources) Of(key string) (Source, bool) {
	e, ok := s.Entry(key)
	return e.Source, ok
}

// Entry returns the entry of a leaf key.
func (s *Sources) Entry(key string) (Entry, bool) {
	i, ok := s.index[key]
	if !ok {
		return Entry{}, false
	}
	return s.entries[i], true
}

// Entries lists every leaf in a stable order: keys in the model's order,
// map entries by name, list entries by position.
func (s *Sources) Entries() []Entry { return slices.Clone(s.entries) }
