package eval

import (
	"github.com/weirhost/weir/surface"
)

// Prefix-break causes: why a request's rendering does not start with the
// whole previous request (its cached prefix ends early).
const (
	BreakPrompt     = "prompt"     // the system prompt changed
	BreakTools      = "tools"      // the tools offered changed
	BreakCompaction = "compaction" // a compaction rewrote the surface
	BreakOther      = "other"      // anything else: mostly the template's <｜tool▁outputs▁end｜> dropped between tool steps (docs/eval.md)
)

// Result is one set's replay.
type Result struct {
	Set      string `json:"set"`
	Baseline bool   `json:"baseline,omitzero"`
	// Tokenizer names the counter; Window is the context window the
	// requests are checked against.
	Tokenizer string        `json:"tokenizer"`
	Window    int64         `json:"contextWindow"`
	Requests  []RequestStat `json:"requests"`
	Totals    Totals        `json:"totals"`
	Probes    []Probe       `json:"probes,omitzero"`
	// Notes say where the replay could not follow the recording.
	Notes []string `json:"notes"`
	// Events is the replayed log (Options.KeepEvents).
	Events []surface.Event `json:"-"`
}

// RequestStat is one request of a replay.
type RequestStat struct {
	N    int   `json:"n"`
	Turn int64 `json:"turn"`
	Step int64 `json:"step"`
	// InputTokens is the request's size; CachedTokens the longest common
	// token prefix with the previous request (an estimate of the
	// provider's prefix cache hit).
	InputTokens  int64 `json:"inputTokens"`
	CachedTokens int64 `json:"cachedTokens"`
	// OutputTokens is the recorded reply's (fixed across sets).
	OutputTokens int64 `json:"outputTokens"`
	// Break is why the cached prefix ended before the previous request's
	// end ("" when it did not).
	Break string `json:"break,omitzero"`
	// PromptChange marks a request whose system prompt differs from the
	// previous one's; Compactions counts the compactions that landed
	// since the previous request.
	PromptChange bool `json:"promptChange,omitzero"`
	Compactions  int  `json:"compactions,omitzero"`
	OverWindow   bool `json:"overWindow,omitzero"`
	// Reproduced (baseline only) says whether the request is the recorded
	// one byte for byte.
	Reproduced *bool  `json:"reproduced,omitzero"`
	Note       string `json:"note,omitzero"`
}

// Totals sum a replay.
type Totals struct {
	Requests     int   `json:"requests"`
	InputTokens  int64 `json:"inputTokens"`
	CachedTokens int64 `json:"cachedTokens"`
	OutputTokens int64 `json:"outputTokens"`
	// Breaks counts prefix breaks by cause.
	Breaks      Breaks        `json:"prefixBreaks"`
	Compactions int           `json:"compactions"`
	Summaries   SummaryCounts `json:"summarizeCalls"`
	PeakTokens  int64         `json:"peakInputTokens"`
	OverWindow  int           `json:"overWindow"`
	// PluginMs is the time spent in the set's compaction providers and
	// meter; PluginFailures counts plugin/failure records.
	PluginMs       int64 `json:"pluginMs"`
	PluginFailures int   `json:"pluginFailures"`
	// LoadMs is the time the caller took to load the set's plugins before
	// the replay (their modules from the compilation cache, and their
	// instances), as the caller reports it: weir eval does; Replay leaves
	// it 0.
	LoadMs int64 `json:"loadMs"`
	// Reproduced counts the requests equal to the recorded ones (baseline).
	Reproduced int  `json:"reproduced,omitzero"`
	Cost       Cost `json:"cost"`
}

// Breaks counts prefix breaks by cause.
type Breaks struct {
	Prompt     int `json:"prompt"`
	Tools      int `json:"tools"`
	Compaction int `json:"compaction"`
	Other      int `json:"other"`
}

// Total is the number of breaks.
func (b Breaks) Total() int { return b.Prompt + b.Tools + b.Compaction + b.Other }

// SummaryCounts counts summarize calls by who answered them.
type SummaryCounts struct {
	// Reused: the recording held the summary of the same request.
	Reused int `json:"reused"`
	// Offline: the extractive summarizer answered.
	Offline int `json:"offline"`
	// Model: the configured model answered; Capped: calls past its cap
	// (answered offline, and counted in Offline too).
	Model  int `json:"model"`
	Capped int `json:"capped,omitzero"`
}

// Total is the number of summarize calls.
func (s SummaryCounts) Total() int { return s.Reused + s.Offline + s.Model }

// Probe is a probed text and the last request (1-based) that showed it to
// the model; 0 when none did.
type Probe struct {
	Text        string `json:"text"`
	LastVisible int    `json:"lastVisible"`
}

// Prices are dollars per million tokens.
type Prices struct {
	CacheHit  float64 `json:"cacheHit"`
	CacheMiss float64 `json:"cacheMiss"`
	Output    float64 `json:"output"`
}

// DeepSeekPrices are the default prices: DeepSeek's API list prices for
// deepseek-chat (V3.2), USD per million tokens — input on a cache hit,
// input on a cache miss, output.
var DeepSeekPrices = Prices{CacheHit: 0.028, CacheMiss: 0.28, Output: 0.42}

// Cost is an estimated cost in dollars.
type Cost struct {
	CacheHit  float64 `json:"cacheHit"`
	CacheMiss float64 `json:"cacheMiss"`
	Output    float64 `json:"output"`
	Total     float64 `json:"total"`
}

// Cost prices input tokens, cached of them served from the prompt cache,
// and output tokens.
func (p Prices) Cost(input, cached, output int64) Cost {
	c := Cost{CacheHit: float64(cached) * p.CacheHit / 1e6, CacheMiss: float64(input-cached) * p.CacheMiss / 1e6,
		Output: float64(output) * p.Output / 1e6}
	c.Total = c.CacheHit + c.CacheMiss + c.Output
	return c
}

func (d *driver) finish() {
	r := d.res
	t := &r.Totals
	p := d.opts.Prices
	if p == (Prices{}) {
		p = DeepSeekPrices
	}
	for _, q := range r.Requests {
		t.Requests++
		t.InputTokens += q.InputTokens
		t.CachedTokens += q.CachedTokens
		t.OutputTokens += q.OutputTokens
		t.PeakTokens = max(t.PeakTokens, q.InputTokens)
		if q.OverWindow {
			t.OverWindow++
		}
		if q.Reproduced != nil && *q.Reproduced {
			t.Reproduced++
		}
		switch q.Break {
		case BreakPrompt:
			t.Breaks.Prompt++
		case BreakTools:
			t.Breaks.Tools++
		case BreakCompaction:
			t.Breaks.Compaction++
		case BreakOther:
			t.Breaks.Other++
		}
	}
	t.PluginMs = d.plugin.total.Milliseconds()
	t.Cost = p.Cost(t.InputTokens, t.CachedTokens, t.OutputTokens)
	for i, text := range d.opts.Probes {
		r.Probes = append(r.Probes, Probe{Text: text, LastVisible: d.visible[i]})
	}
}
