// Command goprompt is the prompt example of sdk/c and sdk/assemblyscript
// written with the Go SDK: the same rendering, so the per-call benchmark
// compares the three guests on the same work.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/weirhost/weir/sdk"
)

type prompt struct{ footer string }

func (p *prompt) configure(raw []byte) error {
	p.footer = ""
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var c struct {
		Footer string `json:"footer"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return errors.New("prompt config: not a JSON object")
	}
	p.footer = c.Footer
	return nil
}

func (p *prompt) RenderPrompt(_ *sdk.Host, req *sdk.RenderRequest) (string, error) {
	var parts []string
	for _, s := range req.Sections {
		if t := strings.TrimSpace(s.Text); t != "" {
			parts = append(parts, t)
		}
	}
	if f := strings.TrimSpace(p.footer); f != "" {
		parts = append(parts, f)
	}
	for _, kv := range req.HostData {
		if kv.Key == "date" {
			if d := strings.TrimSpace(kv.Value); d != "" {
				parts = append(parts, "Today's date: "+d+".")
			}
			break
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

func init() {
	p := &prompt{}
	sdk.Register(sdk.Plugin{Name: "go-prompt", Version: "0.1.0", Configure: p.configure, SystemPrompt: p})
}

func main() {}
