package compact

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Policy is the compaction policy of one target model: the configuration
// table of spec 11.1 resolved for that model.
type Policy struct {
	// ThresholdRatio is the pressure threshold as a fraction of the
	// context window, in (0,1].
	ThresholdRatio float64
	// HeadroomTokens are kept free beyond the reserved completion.
	HeadroomTokens int64
	// RetainRatio is the verbatim tail as a fraction of the message budget;
	// used when HasRetainTokens is false.
	RetainRatio float64
	// RetainTokens is the absolute verbatim tail when HasRetainTokens.
	RetainTokens    int64
	HasRetainTokens bool
	// SummarizationProvider and SummarizationModel name the summarization
	// route; both empty inherit the conversation's route.
	SummarizationProvider string
	SummarizationModel    string
	// MaxTokens caps the summarization call's output; 0 leaves it to the
	// provider (only when it defaulted to a headroom of 0).
	MaxTokens int64
	// CompactionRetries are the extra pressure passes when still above the
	// threshold.
	CompactionRetries int
	// MaxOverflowRetries bounds overflow recoveries per sequence; 0
	// disables overflow recovery.
	MaxOverflowRetries int

	maxTokensSet bool
}

// ModelPolicy is a per-model override resolved over the top-level policy.
type ModelPolicy struct {
	Provider, Model string
	Policy          Policy
}

// Config is a parsed, validated compaction-basic configuration.
type Config struct {
	// Policy is the top-level policy: the defaults with the top-level keys
	// applied.
	Policy Policy
	// Policies are the modelPolicies, each merged field-wise over Policy.
	Policies []ModelPolicy
	// Auto installs the automatic pressure and overflow compaction. When
	// false, only manual and explicit-region compaction run.
	Auto bool
	// MaxCompactionsPerWindow bounds the automatic compaction brackets
	// (pressure and overflow, successful or not) started within any
	// WindowTurns consecutive turns; 0 removes the bound.
	MaxCompactionsPerWindow int
	// WindowTurns is the width of that window in turns (>= 1).
	WindowTurns int
}

// Default values of the configuration table.
const (
	DefaultThresholdRatio          = 0.8
	DefaultHeadroomTokens          = 65536
	DefaultRetainRatio             = 0.16
	DefaultCompactionRetries       = 1
	DefaultMaxOverflowRetries      = 1
	DefaultMaxCompactionsPerWindow = 3
	DefaultWindowTurns             = 1
)

func defaultPolicy() Policy {
	return Policy{
		ThresholdRatio:     DefaultThresholdRatio,
		HeadroomTokens:     DefaultHeadroomTokens,
		RetainRatio:        DefaultRetainRatio,
		MaxTokens:          DefaultHeadroomTokens,
		CompactionRetries:  DefaultCompactionRetries,
		MaxOverflowRetries: DefaultMaxOverflowRetries,
	}
}

// DefaultConfig returns the configuration of an empty config document.
func DefaultConfig() *Config {
	return &Config{Policy: defaultPolicy(), Auto: true,
		MaxCompactionsPerWindow: DefaultMaxCompactionsPerWindow, WindowTurns: DefaultWindowTurns}
}

// For returns the policy of provider/model: its modelPolicies entry when
// one matches exactly, else the top-level policy.
func (c *Config) For(provider, model string) Policy {
	for i := range c.Policies {
		if c.Policies[i].Provider == provider && c.Policies[i].Model == model {
			return c.Policies[i].Policy
		}
	}
	return c.Policy
}

// Keys of a policy object (top level and modelPolicies entries).
const (
	keyThresholdRatio     = "thresholdRatio"
	keyHeadroomTokens     = "headroomTokens"
	keyRetainRatio        = "retainRatio"
	keyRetainTokens       = "retainTokens"
	keySumProvider        = "summarizationProvider"
	keySumModel           = "summarizationModel"
	keyMaxTokens          = "maxTokens"
	keyCompactionRetries  = "compactionRetries"
	keyMaxOverflowRetries = "maxOverflowRetries"
	// top level only
	keyModelPolicies = "modelPolicies"
	keyAuto          = "auto"
	keyMaxPerWindow  = "maxCompactionsPerWindow"
	keyWindowTurns   = "windowTurns"
	// modelPolicies entries only
	keyProvider = "provider"
	keyModel    = "model"
)

// member is one key/value of a JSON object, in document order.
type member struct {
	key   string
	value jsontext.Value // valid JSON, no surrounding space
}

// ParseConfig parses the plugin configuration (a JSON object; empty input
// or null is the default configuration) and validates it. Errors name the
// offending key; modelPolicies errors name the entry.
func ParseConfig(data []byte) (*Config, error) {
	cfg := DefaultConfig()
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return cfg, nil
	}
	ms, err := objectMembers(trimmed)
	if err != nil {
		return nil, fmt.Errorf("compaction config: %w", err)
	}
	var policies jsontext.Value
	top := ms[:0:0]
	for _, m := range ms {
		switch m.key {
		case keyModelPolicies:
			policies = m.value
		case keyAuto:
			switch string(m.value) {
			case "true", "false":
				cfg.Auto = string(m.value) == "true"
			default:
				return nil, keyErr("", m.key, "must be true or false")
			}
		case keyMaxPerWindow:
			n, err := intValue("", m, 0)
			if err != nil {
				return nil, err
			}
			cfg.MaxCompactionsPerWindow = int(n)
		case keyWindowTurns:
			n, err := intValue("", m, 1)
			if err != nil {
				return nil, err
			}
			cfg.WindowTurns = int(n)
		default:
			top = append(top, m)
		}
	}
	if err := applyPolicy(&cfg.Policy, top, ""); err != nil {
		return nil, err
	}
	if policies != nil {
		if err := parsePolicies(cfg, policies); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

func parsePolicies(cfg *Config, raw jsontext.Value) error {
	if !isKind(raw, '[') {
		return keyErr("", keyModelPolicies, "must be an array of {provider, model, ...overrides}")
	}
	entries, err := arrayElements(raw)
	if err != nil {
		return keyErr("", keyModelPolicies, err.Error())
	}
	for i, e := range entries {
		where := fmt.Sprintf("%s[%d]", keyModelPolicies, i)
		if !isKind(e, '{') {
			return fmt.Errorf("compaction config: %s must be an object", where)
		}
		ms, err := objectMembers(e)
		if err != nil {
			return fmt.Errorf("compaction config: %s: %w", where, err)
		}
		var mp ModelPolicy
		var overrides []member
		for _, m := range ms {
			switch m.key {
			case keyProvider, keyModel:
				s, err := unquote(m.value)
				if err != nil || s == "" {
					return keyErr(where, m.key, "must be a non-empty string")
				}
				if m.key == keyProvider {
					mp.Provider = s
				} else {
					mp.Model = s
				}
			case keyModelPolicies, keyAuto, keyMaxPerWindow, keyWindowTurns:
				return keyErr(where, m.key, "is a top-level key and cannot be overridden per model")
			default:
				overrides = append(overrides, m)
			}
		}
		if mp.Provider == "" || mp.Model == "" {
			return fmt.Errorf("compaction config: %s needs a non-empty provider and model", where)
		}
		where = fmt.Sprintf("%s (%s/%s)", where, mp.Provider, mp.Model)
		for j := range cfg.Policies {
			if cfg.Policies[j].Provider == mp.Provider && cfg.Policies[j].Model == mp.Model {
				return fmt.Errorf("compaction config: %s duplicates %s[%d]: one policy per provider/model", where, keyModelPolicies, j)
			}
		}
		mp.Policy = cfg.Policy
		if err := applyPolicy(&mp.Policy, overrides, where); err != nil {
			return err
		}
		cfg.Policies = append(cfg.Policies, mp)
	}
	return nil
}

// applyPolicy merges policy keys over p and validates the result. A
// retention form given here replaces the inherited one.
func applyPolicy(p *Policy, ms []member, where string) error {
	var hasRatio, hasTokens, hasSumProvider, hasSumModel bool
	for _, m := range ms {
		var err error
		switch m.key {
		case keyThresholdRatio:
			p.ThresholdRatio, err = ratioValue(where, m)
		case keyHeadroomTokens:
			p.HeadroomTokens, err = intValue(where, m, 0)
		case keyRetainRatio:
			p.RetainRatio, err = ratioValue(where, m)
			hasRatio = true
		case keyRetainTokens:
			p.RetainTokens, err = intValue(where, m, 0)
			hasTokens = true
		case keySumProvider:
			p.SummarizationProvider, err = stringValue(where, m)
			hasSumProvider = true
		case keySumModel:
			p.SummarizationModel, err = stringValue(where, m)
			hasSumModel = true
		case keyMaxTokens:
			p.MaxTokens, err = intValue(where, m, 1)
			p.maxTokensSet = true
		case keyCompactionRetries:
			var n int64
			n, err = intValue(where, m, 0)
			p.CompactionRetries = int(n)
		case keyMaxOverflowRetries:
			var n int64
			n, err = intValue(where, m, 0)
			p.MaxOverflowRetries = int(n)
		default:
			err = keyErr(where, m.key, "is an unknown key")
		}
		if err != nil {
			return err
		}
	}
	switch {
	case hasRatio && hasTokens:
		return keyErr(where, keyRetainRatio, "and retainTokens are exclusive: give one retention form")
	case hasRatio:
		p.HasRetainTokens, p.RetainTokens = false, 0
	case hasTokens:
		p.HasRetainTokens = true
	}
	if hasSumProvider != hasSumModel || (p.SummarizationProvider == "") != (p.SummarizationModel == "") {
		return keyErr(where, keySumProvider, "and summarizationModel must be set together: both empty or both non-empty")
	}
	if !p.maxTokensSet {
		p.MaxTokens = p.HeadroomTokens
	}
	if !p.HasRetainTokens && p.RetainRatio >= p.ThresholdRatio {
		return keyErr(where, keyRetainRatio, fmt.Sprintf("%g must be less than thresholdRatio %g", p.RetainRatio, p.ThresholdRatio))
	}
	return nil
}

func keyErr(where, key, msg string) error {
	if where != "" {
		return fmt.Errorf("compaction config: %s: key %q %s", where, key, msg)
	}
	return fmt.Errorf("compaction config: key %q %s", key, msg)
}

// objectMembers splits a JSON object into its members in document order,
// rejecting duplicate keys and trailing data.
func objectMembers(data []byte) ([]member, error) {
	// Duplicates are allowed here so that the check below names the key
	// in this package's words.
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true))
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if tok.Kind() != '{' {
		return nil, errors.New("must be a JSON object")
	}
	var ms []member
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		key := tok.String() // object keys are always strings
		v, err := dec.ReadValue()
		if err != nil {
			return nil, fmt.Errorf("key %q: not valid JSON: %w", key, err)
		}
		for _, m := range ms {
			if m.key == key {
				return nil, fmt.Errorf("key %q appears twice", key)
			}
		}
		ms = append(ms, member{key: key, value: bytes.Clone(v)}) // v is the decoder's buffer
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	return ms, nil
}

// arrayElements splits a JSON array (valid JSON) into its elements.
func arrayElements(data jsontext.Value) ([]jsontext.Value, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, errors.New("must be a JSON array")
	}
	var out []jsontext.Value
	for dec.PeekKind() != ']' {
		v, err := dec.ReadValue()
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		out = append(out, bytes.Clone(v))
	}
	return out, nil
}

// unquote returns the string a JSON string value holds.
func unquote(v jsontext.Value) (string, error) {
	if v.Kind() != '"' {
		return "", errors.New("not a string")
	}
	b, err := jsontext.AppendUnquote(nil, v)
	return string(b), err
}

func isKind(v []byte, kinds ...byte) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return false
	}
	return bytes.IndexByte(kinds, v[0]) >= 0
}

func number(where string, m member) (float64, error) {
	if !isKind(m.value, '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9') {
		return 0, keyErr(where, m.key, "must be a number")
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(m.value)), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, keyErr(where, m.key, "must be a finite number")
	}
	return f, nil
}

func ratioValue(where string, m member) (float64, error) {
	f, err := number(where, m)
	if err != nil {
		return 0, err
	}
	if !(f > 0 && f <= 1) {
		return 0, keyErr(where, m.key, fmt.Sprintf("must be a number in (0,1], got %g", f))
	}
	return f, nil
}

// maxInt is the largest integer a JSON number carries exactly everywhere.
const maxInt = 1<<53 - 1

func intValue(where string, m member, min int64) (int64, error) {
	f, err := number(where, m)
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || f > maxInt || f < -maxInt {
		return 0, keyErr(where, m.key, fmt.Sprintf("must be an integer, got %s", bytes.TrimSpace(m.value)))
	}
	n := int64(f)
	if n < min {
		return 0, keyErr(where, m.key, fmt.Sprintf("must be an integer >= %d, got %d", min, n))
	}
	return n, nil
}

func stringValue(where string, m member) (string, error) {
	s, err := unquote(m.value)
	if err != nil {
		return "", keyErr(where, m.key, "must be a string")
	}
	return s, nil
}
