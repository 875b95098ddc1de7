package inspect

import (
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weirhost/weir/host"
	"github.com/weirhost/weir/surface"
)

// The JSON of a request (/api/s/NAME/requests/N) is bounded as its page
// is: a block's string holds at most ShowBytes (a message's text, its
// reasoning and a tool call's arguments at most PartBytes, as the page
// shows them), cut at a character boundary, and a string cut short has a
// sibling marker ("bodyCut" beside "body", …) giving the whole string's
// length and the address of its exact bytes. A view's JSON therefore
// costs the same whatever a block holds; the request it is made from is
// built once and shared (see Model.Request).
const PartBytes = 4 << 10

// Cut marks a string of a JSON answer that holds only its first Shown
// bytes: the whole string has Bytes bytes and Chars characters, and URL
// serves it exactly.
type Cut struct {
	Bytes int    `json:"bytes"`
	Chars int    `json:"chars"`
	Shown int    `json:"shownBytes"`
	URL   string `json:"url"`
}

// cut returns s bounded to limit bytes and, when it was cut, its marker.
func cut(s string, limit int, url string) (string, *Cut) {
	if len(s) <= limit {
		return s, nil
	}
	shown := cutAt(s, limit)
	return shown, &Cut{Bytes: len(s), Chars: utf8.RuneCountInString(s), Shown: len(shown), URL: url}
}

type requestJSON struct {
	Index     int               `json:"request"`
	Seq       int64             `json:"seq"`
	Count     int               `json:"requests"`
	Body      string            `json:"body"`
	BodyCut   *Cut              `json:"bodyCut,omitzero"`
	Pretty    string            `json:"pretty"`
	PrettyCut *Cut              `json:"prettyCut,omitzero"`
	Prev      int64             `json:"prevSeq,omitzero"`
	Diff      string            `json:"diff,omitzero"`
	DiffCut   *Cut              `json:"diffCut,omitzero"`
	Tokens    *host.Measurement `json:"tokens,omitzero"`
	Usage     *surface.Usage    `json:"usage,omitzero"`
	Failed    bool              `json:"failed,omitzero"`
	Time      int64             `json:"time,omitzero"`
	Wall      int64             `json:"wallMs,omitzero"`
	Sent      int64             `json:"sentMs,omitzero"`
	First     *int64            `json:"firstTokenMs,omitzero"`
	Prompt    *promptJSON       `json:"prompt,omitzero"`
	PromptNew bool              `json:"promptNew,omitzero"`
	Messages  []messageJSON     `json:"messages,omitzero"`
	Omitted   int               `json:"omittedMessages,omitzero"`
}

type promptJSON struct {
	Seq         int64  `json:"seq"`
	Kind        string `json:"kind"`
	Replaces    int64  `json:"replaces,omitzero"`
	Text        string `json:"text"`
	TextCut     *Cut   `json:"textCut,omitzero"`
	InEffect    string `json:"inEffect"`
	InEffectCut *Cut   `json:"inEffectCut,omitzero"`
	Diff        string `json:"diff,omitzero"`
	DiffCut     *Cut   `json:"diffCut,omitzero"`
}

type messageJSON struct {
	Kind         string     `json:"kind"`
	Role         string     `json:"role,omitzero"`
	Text         string     `json:"text,omitzero"`
	TextCut      *Cut       `json:"textCut,omitzero"`
	Reasoning    []string   `json:"reasoning,omitzero"`
	ReasoningCut []*Cut     `json:"reasoningCut,omitzero"` // one per reasoning block, null when whole
	Calls        []callJSON `json:"toolCalls,omitzero"`
	CallID       string     `json:"callId,omitzero"`
	IsError      bool       `json:"isError,omitzero"`
}

type callJSON struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Arguments    string `json:"arguments"`
	ArgumentsCut *Cut   `json:"argumentsCut,omitzero"`
}

// boundedJSON is r's JSON view for the session name: every block bounded,
// each cut one marked with the address of its exact bytes (see parts).
func boundedJSON(r *Request, name string) *requestJSON {
	base := "/api/s/" + url.PathEscape(name) + "/requests/" + strconv.Itoa(r.Index)
	part := func(p string) string { return base + "/parts/" + p }
	out := &requestJSON{Index: r.Index, Seq: r.Seq, Count: r.Count, Prev: r.Prev, Tokens: r.Tokens, Usage: r.Usage,
		Failed: r.Failed, Time: r.Time, Wall: r.Wall, Sent: r.Sent, First: r.First, PromptNew: r.PromptNew, Omitted: r.Omitted}
	out.Body, out.BodyCut = cut(r.Body, ShowBytes, base+"/body?download=1")
	out.Pretty, out.PrettyCut = cut(r.Pretty, ShowBytes, part("pretty"))
	out.Diff, out.DiffCut = cut(r.Diff, ShowBytes, part("diff"))
	if p := r.Prompt; p != nil {
		j := &promptJSON{Seq: p.Seq, Kind: p.Kind, Replaces: p.Replaces}
		j.Text, j.TextCut = cut(p.Text, ShowBytes, part("prompt/text"))
		j.InEffect, j.InEffectCut = cut(p.InEffect, ShowBytes, part("prompt/in-effect"))
		j.Diff, j.DiffCut = cut(p.Diff, ShowBytes, part("prompt/diff"))
		out.Prompt = j
	}
	out.Messages = make([]messageJSON, len(r.Messages))
	for i, it := range r.Messages {
		mp := "messages/" + strconv.Itoa(i) + "/"
		j := messageJSON{Kind: it.Kind, Role: it.Role, CallID: it.CallID, IsError: it.IsError}
		j.Text, j.TextCut = cut(it.Text, PartBytes, part(mp+"text"))
		anyCut := false
		for k, s := range it.Reasoning {
			shown, c := cut(s, PartBytes, part(mp+"reasoning/"+strconv.Itoa(k)))
			j.Reasoning = append(j.Reasoning, shown)
			j.ReasoningCut = append(j.ReasoningCut, c)
			anyCut = anyCut || c != nil
		}
		if !anyCut {
			j.ReasoningCut = nil
		}
		for k, c := range it.Calls {
			cj := callJSON{ID: c.ID, Name: c.Name}
			cj.Arguments, cj.ArgumentsCut = cut(c.Arguments, PartBytes, part(mp+"calls/"+strconv.Itoa(k)+"/arguments"))
			j.Calls = append(j.Calls, cj)
		}
		out.Messages[i] = j
	}
	return out
}

// part returns the whole string a Cut's URL names: "pretty", "diff",
// "prompt/text", "prompt/in-effect", "prompt/diff",
// "messages/I/text", "messages/I/reasoning/K" or
// "messages/I/calls/K/arguments".
func (r *Request) part(name string) (string, bool) {
	switch name {
	case "pretty":
		return r.Pretty, true
	case "diff":
		return r.Diff, true
	}
	if p, ok := strings.CutPrefix(name, "prompt/"); ok && r.Prompt != nil {
		switch p {
		case "text":
			return r.Prompt.Text, true
		case "in-effect":
			return r.Prompt.InEffect, true
		case "diff":
			return r.Prompt.Diff, true
		}
		return "", false
	}
	f := strings.Split(name, "/")
	index := func(s string, n int) (int, bool) {
		i, err := strconv.Atoi(s)
		return i, err == nil && i >= 0 && i < n && strconv.Itoa(i) == s
	}
	if len(f) < 3 || f[0] != "messages" {
		return "", false
	}
	i, ok := index(f[1], len(r.Messages))
	if !ok {
		return "", false
	}
	it := r.Messages[i]
	switch {
	case len(f) == 3 && f[2] == "text":
		return it.Text, true
	case len(f) == 4 && f[2] == "reasoning":
		if k, ok := index(f[3], len(it.Reasoning)); ok {
			return it.Reasoning[k], true
		}
	case len(f) == 5 && f[2] == "calls" && f[4] == "arguments":
		if k, ok := index(f[3], len(it.Calls)); ok {
			return it.Calls[k].Arguments, true
		}
	}
	return "", false
}
