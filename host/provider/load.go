package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/host/plugin"
	"github.com/weirhost/weir/sdk/abi"
)

// Role is what a plugin is configured to provide.
type Role string

// Roles, named as in the host configuration.
const (
	RoleSystemPrompt Role = "system-prompt"
	RoleCompaction   Role = "compaction"
	RoleTokenMeter   Role = "token-meter"
)

// Kind is the ABI provider kind of the role, or abi.KindUnspecified for an
// unknown role.
func (r Role) Kind() abi.Kind {
	switch r {
	case RoleSystemPrompt:
		return abi.KindSystemPrompt
	case RoleCompaction:
		return abi.KindCompaction
	case RoleTokenMeter:
		return abi.KindTokenMeter
	}
	return abi.KindUnspecified
}

// Spec describes a plugin to load.
type Spec struct {
	// Name is the plugin's name: in logs, errors, plugin/failure events, and
	// as the source of the system messages a prompt plugin renders.
	Name string
	// Role is the one provider role the plugin serves; the host calls no
	// other method of it.
	Role Role
	// Wasm is the module.
	Wasm []byte
	// Config is the plugin configuration, a JSON value (empty for none).
	Config []byte
	Limits Limits
}

// Limits bound one plugin. Zero values keep the runtime's defaults
// (docs/abi.md section 8).
type Limits struct {
	// Call is the deadline of one provider call.
	Call time.Duration
	// Start is the deadline of starting an instance (instantiate, init).
	Start time.Duration
	// Output caps an output frame, in bytes.
	Output int
	// Input caps a request, in bytes.
	Input int
	// State caps the state blob the plugin may return, in bytes.
	State int
	// SoftMemory retires an instance whose memory grew past it, in bytes.
	SoftMemory uint64
	// Instances bounds the live instances, hence concurrent calls.
	Instances int
	// CallsPerInstance retires an instance after that many calls.
	CallsPerInstance int
}

func (l Limits) options(kind abi.Kind) []plugin.Option {
	var opts []plugin.Option
	if l.Call > 0 {
		opts = append(opts, plugin.WithDeadline(kind, l.Call))
	}
	if l.Start > 0 {
		opts = append(opts, plugin.WithDeadline(abi.KindUnspecified, l.Start))
	}
	if l.Output > 0 {
		opts = append(opts, plugin.WithOutputLimit(l.Output))
	}
	if l.Input > 0 {
		opts = append(opts, plugin.WithInputLimit(l.Input))
	}
	if l.State > 0 {
		opts = append(opts, plugin.WithStateLimit(l.State))
	}
	if l.SoftMemory > 0 {
		opts = append(opts, plugin.WithSoftMemoryLimit(l.SoftMemory))
	}
	if l.Instances > 0 {
		opts = append(opts, plugin.WithMaxInstances(l.Instances))
	}
	if l.CallsPerInstance > 0 {
		opts = append(opts, plugin.WithMaxCalls(l.CallsPerInstance))
	}
	return opts
}

// Plugin is a plugin loaded for one role. It hands out the adapters of
// that role only (the module may implement more kinds; the host never
// calls them), and they share its instance pool. It is safe for
// concurrent use.
type Plugin struct {
	p     *plugin.Plugin
	role  Role
	opts  []Option
	state int // the state limit, for the adapters' own check
	// fingerprint of the module (its SHA-256, which the runtime already
	// took) and configuration, for StateCache entries.
	fingerprint []byte
}

// Load validates spec, loads the module into rt and checks that it
// provides the configured role. opts apply to every adapter the plugin
// hands out.
func Load(ctx context.Context, rt *plugin.Runtime, spec Spec, opts ...Option) (*Plugin, error) {
	if spec.Name == "" {
		return nil, errors.New("provider: load: the plugin has no name")
	}
	kind := spec.Role.Kind()
	if kind == abi.KindUnspecified {
		return nil, fmt.Errorf("plugin %q: role %q is not one of %s, %s, %s", spec.Name, spec.Role,
			RoleSystemPrompt, RoleCompaction, RoleTokenMeter)
	}
	if len(spec.Wasm) == 0 {
		return nil, fmt.Errorf("plugin %q: no module bytes", spec.Name)
	}
	if len(spec.Config) > 0 && !jsontext.Value(spec.Config).IsValid() {
		return nil, fmt.Errorf("plugin %q: the configuration is not valid JSON", spec.Name)
	}
	popts := append([]plugin.Option{plugin.WithConfig(spec.Config)}, spec.Limits.options(kind)...)
	p, err := rt.Load(ctx, spec.Name, spec.Wasm, popts...)
	if err != nil {
		return nil, err
	}
	if err := checkRole(p, spec.Role); err != nil {
		_ = p.Close(ctx)
		return nil, err
	}
	state := spec.Limits.State
	if state <= 0 {
		state = plugin.DefaultStateLimit
	}
	return &Plugin{p: p, role: spec.Role, opts: opts, state: state,
		fingerprint: fingerprint(p.ModuleSum(), spec.Config)}, nil
}

// checkRole reports a plugin that does not provide role.
func checkRole(p *plugin.Plugin, role Role) error {
	if p.Provides(role.Kind()) {
		return nil
	}
	desc := p.Description()
	var has []string
	for _, k := range desc.Kinds {
		has = append(has, k.String())
	}
	return fmt.Errorf("plugin %q is configured as a %s provider, but its module provides only %s",
		p.Name(), role, strings.Join(has, ", "))
}

// Name is the plugin's name.
func (p *Plugin) Name() string { return p.p.Name() }

// Role is the role the plugin was loaded for.
func (p *Plugin) Role() Role { return p.role }

// Stats returns the runtime's counters of the plugin.
func (p *Plugin) Stats() plugin.Stats { return p.p.Stats() }

// Description is what the module said about itself at load.
func (p *Plugin) Description() abi.Description { return p.p.Description() }

// Close closes the plugin's instances.
func (p *Plugin) Close(ctx context.Context) error { return p.p.Close(ctx) }

func (p *Plugin) wrongRole(want Role) error {
	return fmt.Errorf("plugin %q is loaded as a %s provider, not as a %s provider", p.Name(), p.role, want)
}

// SystemPrompt returns the prompt adapter for session s (see NewSystemPrompt).
func (p *Plugin) SystemPrompt(s *host.Session) (*SystemPrompt, error) {
	if p.role != RoleSystemPrompt {
		return nil, p.wrongRole(RoleSystemPrompt)
	}
	return NewSystemPrompt(p.p, s, p.opts...)
}

// Compaction returns the compaction adapter (see NewCompaction). One
// adapter may serve many sessions.
func (p *Plugin) Compaction() (*Compaction, error) {
	if p.role != RoleCompaction {
		return nil, p.wrongRole(RoleCompaction)
	}
	return NewCompaction(p.p, append([]Option{WithStateLimit(p.state)}, p.opts...)...)
}

// Meter returns the token meter of session s (see NewMeter); opts apply
// after the ones given to Load.
func (p *Plugin) Meter(s *host.Session, opts ...Option) (*Meter, error) {
	if p.role != RoleTokenMeter {
		return nil, p.wrongRole(RoleTokenMeter)
	}
	opts = append(append([]Option{WithStateLimit(p.state), withFingerprint(p.fingerprint)}, p.opts...), opts...)
	return NewMeter(p.p, s, opts...)
}
