// Command benign is a well-behaved test plugin implementing every provider
// kind, so tests can drive the full round trip: typed SDK, frames, host
// decoding, and every host import.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/weirhost/weir/sdk"
	"github.com/weirhost/weir/sdk/abi"
)

var config []byte

func configure(c []byte) error {
	if bytes.Contains(c, []byte(`"fail"`)) {
		return errors.New("config asks to fail")
	}
	config = c
	return nil
}

type prompt struct{}

// RenderPrompt renders "key: text" lines, then host data and the route. The
// model name selects extra behaviour used by the tests.
func (prompt) RenderPrompt(h *sdk.Host, req *sdk.RenderRequest) (string, error) {
	switch req.Route.Model {
	case "echo": // the 1 KiB / 64 KiB / 1 MiB benchmark: the one section's text back
		if len(req.Sections) == 1 {
			return req.Sections[0].Text, nil
		}
	case "count":
		n, err := h.CountTokens("test-tokenizer", req.Sections[0].Text)
		if err != nil {
			return "", err
		}
		return "tokens=" + strconv.Itoa(n), nil
	case "summarize": // not granted to prompt providers
		_, err := h.Summarize(&sdk.SummarizeRequest{Instruction: "x"})
		return "", err
	case "nodes": // not granted to prompt providers
		_, err := h.SurfaceNodes()
		return "", err
	case "config":
		return "config=" + string(config), nil
	case "fail":
		return "", errors.New("cannot render for model fail")
	case "entropy": // what the sandbox lets a plugin see of time and randomness
		return time.Now().UTC().Format(time.RFC3339Nano) + " " + strconv.FormatUint(rand.Uint64(), 16), nil
	}
	var b strings.Builder
	for _, s := range req.Sections {
		b.WriteString(s.Key + ": " + s.Text + "\n")
	}
	for _, kv := range req.HostData {
		b.WriteString(kv.Key + "=" + kv.Value + "\n")
	}
	b.WriteString("route=" + req.Route.Provider + "/" + req.Route.Model)
	return b.String(), nil
}

type compaction struct{}

// PreStep reads the session through every granted query and proposes a
// compaction of the first two surface nodes.
func (compaction) PreStep(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	nodes, err := h.SurfaceNodes()
	if err != nil {
		return nil, err
	}
	if len(nodes) < 2 {
		return nil, nil
	}
	gen, err := h.Generations()
	if err != nil {
		return nil, err
	}
	header, err := h.Header()
	if err != nil && !errors.Is(err, sdk.ErrNotFound) {
		return nil, err
	}
	m, err := h.Measure()
	if err != nil {
		return nil, err
	}
	var msgs [][]byte
	for _, n := range nodes[:2] {
		msg, err := h.Message(n.Seq)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, msg)
	}
	sum, err := h.Summarize(&sdk.SummarizeRequest{Messages: msgs, Instruction: "summarize", MaxTokens: 100})
	if err != nil {
		return nil, err
	}
	start := gen.LogLength
	summary := strings.Join(sum.Text, "")
	data := `{"summary":` + strconv.Quote(summary) + `,"header":` + strconv.Itoa(len(header)) +
		`,"total":` + strconv.FormatInt(m.TotalTokens, 10) + `,"turn":` + strconv.FormatInt(req.Turn, 10) + `}`
	return &sdk.CompactionResult{
		Proposals: []sdk.Proposal{
			{Type: "compaction/start", Data: []byte(`{"turn":` + strconv.FormatInt(req.Turn, 10) + `}`)},
			{Type: "compaction/summary", Data: []byte(data)},
			{
				Type: "user/message", Data: []byte(`{"id":"c1","role":"user"}`),
				Intent:             sdk.Intent{Kind: abi.IntentReplace, StartSeq: nodes[0].Seq, EndSeq: nodes[1].Seq},
				SourceEventSeqs:    []int64{start, start + 1, nodes[0].Seq, nodes[1].Seq},
				HasSourceEventSeqs: true,
			},
			{Type: "compaction/end", Data: []byte(`{}`)},
		},
		State:    append(append([]byte(nil), req.State...), 'x'),
		HasState: true,
	}, nil
}

func (compaction) Manual(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return nil, nil
}

func (compaction) Overflow(h *sdk.Host, req *sdk.CompactionRequest) (*sdk.CompactionResult, error) {
	return nil, errors.New("overflow " + req.Failure.Code + ": nothing to compact")
}

type meter struct{}

// Observe keeps two counters in the state blob: events seen and JSON bytes
// seen, and counts the tokens of each event through the host tokenizer.
func (meter) Observe(h *sdk.Host, req *sdk.ObserveRequest) ([]byte, error) {
	var events, size, tokens uint64
	if len(req.State) == 24 {
		events = binary.LittleEndian.Uint64(req.State)
		size = binary.LittleEndian.Uint64(req.State[8:])
		tokens = binary.LittleEndian.Uint64(req.State[16:])
	}
	for _, e := range req.Events {
		events++
		size += uint64(len(e.JSON))
		n, err := h.CountTokens("test-tokenizer", string(e.JSON))
		if err != nil {
			return nil, err
		}
		tokens += uint64(n)
	}
	out := binary.LittleEndian.AppendUint64(nil, events)
	out = binary.LittleEndian.AppendUint64(out, size)
	return binary.LittleEndian.AppendUint64(out, tokens), nil
}

func (meter) Measure(h *sdk.Host, req *sdk.MeasureRequest) (*sdk.Measurement, error) {
	if len(req.State) != 24 {
		return &sdk.Measurement{}, nil
	}
	// The tokens of every event seen price the surface; an override's
	// size prices its tools. The total is their sum, as the ABI states.
	tokens := int64(binary.LittleEndian.Uint64(req.State[16:]))
	var tools int64
	if req.HasHeaderOverride {
		tools = int64(len(req.HeaderOverride))
	}
	return &sdk.Measurement{
		LogRevision:   int64(binary.LittleEndian.Uint64(req.State)),
		Baseline:      abi.Baseline{Kind: abi.BaselineEstimated, Tokens: tokens + tools},
		TotalTokens:   tokens + tools,
		SurfaceTokens: tokens,
		Breakdown:     abi.Breakdown{MessageTokens: tokens, ToolsTokens: tools},
	}, nil
}

func init() {
	sdk.Register(sdk.Plugin{
		Name:         "benign",
		Version:      "1.0.0",
		Configure:    configure,
		SystemPrompt: prompt{},
		Compaction:   compaction{},
		Meter:        meter{},
	})
}

func main() {}
