// Command pruner is an example third-party compaction plugin, written
// against the Weir SDK only. It makes room without a model call: it
// rewrites the content of old, large tool results to a short notice.
//
// Each rewrite is two proposals, admitted with the rest of the call's
// batch or not at all:
//
//	compaction/prune {shadowedRange, shadowedSeqs, shadowedTokenCount, bytes}
//	tool/result replacing exactly that node, citing it and the prune event
//
// The replacement follows the tool-result rewrite rule (spec 4.6): it shadows
// one tool/result and its data equals the original's except the inner
// content of the tool-result block. The compaction/prune event right before
// it states the replaced node's heuristic price, so token meters can move
// their running totals by the difference (the shadow-price protocol).
//
// # When it prunes
//
// Before a step (compaction.prestep), when the measured request reaches
// triggerRatio of the route's context window; always on manual compaction
// and on a context-overflow recovery. It prunes tool results of at least
// minBytes of message JSON, oldest first, never the keepRecent newest tool
// results nor failed ones, at most maxPerCall per call.
//
// # What it must remember
//
// The rewrite must repeat the original event's turn and step, which the
// host imports do not expose (message gives the message, not the event
// data). The pruner learns them as results appear: a tool result is made in
// the step before the pre-step call that first sees it. It keeps, in the
// state blob the host stores per session, the turn and step of the last
// pre-step call and the log length then, and the origin of every tool
// result it has attributed. It only attributes a result when exactly one
// new assistant message appeared since that call (so no step went by
// unseen), and it never rewrites a result it could not attribute. When a
// batch was refused anyway and the host handed back the state returned with
// it (the results it proposed to prune are still on the surface at the next
// call), it gives up on those results. Weir's host keeps the previous state
// of a refused batch instead, so there a refusal repeats until the host's
// failure limit stops the plugin for the session.
//
// # Configuration
//
//	{"minBytes": 4096, "keepRecent": 3, "triggerRatio": 0.6, "maxPerCall": 8,
//	 "notice": "[tool output pruned to save context]"}
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/weirhost/weir/sdk"
)

// config is the plugin configuration; see the package comment.
type config struct {
	MinBytes     int64   `json:"minBytes"`
	KeepRecent   int     `json:"keepRecent"`
	TriggerRatio float64 `json:"triggerRatio"`
	MaxPerCall   int     `json:"maxPerCall"`
	Notice       string  `json:"notice"`
}

func defaults() config {
	return config{MinBytes: 4096, KeepRecent: 3, TriggerRatio: 0.6, MaxPerCall: 8,
		Notice: "[tool output pruned to save context]"}
}

func parseConfig(raw []byte) (config, error) {
	c := defaults()
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return c, fmt.Errorf("pruner config: %w", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return c, errors.New("pruner config: data after the configuration object")
		}
	}
	switch {
	case c.MinBytes < 1:
		return c, fmt.Errorf("pruner config: minBytes must be at least 1, got %d", c.MinBytes)
	case c.KeepRecent < 0:
		return c, fmt.Errorf("pruner config: keepRecent must not be negative, got %d", c.KeepRecent)
	case c.TriggerRatio <= 0 || c.TriggerRatio > 1:
		return c, fmt.Errorf("pruner config: triggerRatio must be in (0,1], got %g", c.TriggerRatio)
	case c.MaxPerCall < 1 || c.MaxPerCall > 512:
		return c, fmt.Errorf("pruner config: maxPerCall must be 1 to 512, got %d", c.MaxPerCall)
	case c.Notice == "":
		return c, errors.New("pruner config: notice must not be empty")
	}
	return c, nil
}

func init() {
	p := &pruner{cfg: defaults()}
	sdk.Register(sdk.Plugin{
		Name:    "pruner",
		Version: "0.1.0",
		Configure: func(raw []byte) (err error) {
			p.cfg, err = parseConfig(raw)
			return err
		},
		Compaction: p,
	})
}

// main is never called: a plugin is a reactor module, set up by init.
func main() {}
