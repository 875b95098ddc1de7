// Package trap is a hostile test plugin in the system-prompt role. It
// renders the non-empty sections joined by blank lines, unless a section's
// text is one of the words below, which make it misbehave:
//
//   - "panic": panics (the SDK recovers and reports status panic);
//   - "loop": loops forever without yielding (the call's deadline stops it);
//   - "exit": exits the process (proc_exit, which the host reports as a trap);
//   - "fail": returns an error (status plugin error).
package trap

import (
	"errors"
	"os"
	"strings"

	"github.com/weirhost/weir/sdk"
)

type prompt struct{}

func (prompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	var parts []string
	for _, s := range req.Sections {
		switch s.Text {
		case "panic":
			panic("trap: asked to panic")
		case "loop":
			for {
			}
		case "exit":
			os.Exit(3)
		case "fail":
			return "", errors.New("trap: asked to fail")
		}
		if t := strings.TrimSpace(s.Text); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

// Plugin is the plugin under the name a test loads it by.
func Plugin(name string) sdk.Plugin {
	return sdk.Plugin{Name: name, Version: "1.0.0", SystemPrompt: prompt{}}
}
