package host

import (
	"context"
	"strings"
)

// SectionPrompt is the native system-prompt renderer: the assembly's
// non-empty sections in order, separated by blank lines. It is
// deterministic, so an unchanged assembly renders the same bytes.
type SectionPrompt struct {
	// Plugin is the id recorded as the system messages' source
	// ("system-prompt" when empty).
	Plugin string
}

// ID is the provider id.
func (p *SectionPrompt) ID() string {
	if p.Plugin == "" {
		return "system-prompt"
	}
	return p.Plugin
}

// Render joins the sections.
func (p *SectionPrompt) Render(_ context.Context, a *Assembly) (string, error) {
	var parts []string
	for _, s := range a.Sections {
		if t := strings.TrimSpace(s.Text); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}
