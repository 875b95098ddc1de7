package provider

import (
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/weirhost/weir/surface"
)

// legacyBracketMinor is the newest ABI minor whose checkpoints needed no
// compaction bracket: minor 2 added the rule compaction/bracket, so the
// host brackets the checkpoints of a plugin that declares minor 0 or 1
// (docs/abi.md, section 9.2). A plugin declaring minor 2 or later gets the
// rule as it is.
const legacyBracketMinor = 1

// bracketLegacy returns the batch of a plugin declaring an ABI minor of at
// most legacyBracketMinor with every checkpoint (a user/message
// replacement) that stands outside a compaction bracket wrapped in one the
// host writes: compaction/start, compaction/summary shadowing what the
// checkpoint cites, the checkpoint, compaction/end, all under the
// checkpoint's source.compactionId (else "abi1-" and the seq the
// checkpoint would have had). The start records "repairedBy":"host". at is
// the seq of the batch's first proposal, turn the open turn (0: none).
//
// The repair shifts the seqs of the proposals after each inserted event,
// so it is made only when no proposal names a seq of the batch (at or
// later) and the batch holds no compaction/* event of its own; any other
// batch is returned unchanged for admission to judge. The count is the
// number of checkpoints bracketed.
func bracketLegacy(ps []surface.Proposal, at, turn int64) ([]surface.Proposal, int) {
	checkpoints := 0
	for _, p := range ps {
		if strings.HasPrefix(p.Type, "compaction/") {
			return ps, 0
		}
		if p.Op.Kind == surface.OpReplace && (p.Op.Start >= at || p.Op.End >= at) {
			return ps, 0
		}
		if slices.ContainsFunc(p.Sources, func(s int64) bool { return s >= at }) {
			return ps, 0
		}
		if isCheckpoint(p) {
			checkpoints++
		}
	}
	if checkpoints == 0 {
		return ps, 0
	}
	turnJSON := "null"
	if turn != 0 {
		turnJSON = strconv.FormatInt(turn, 10)
	}
	out := make([]surface.Proposal, 0, len(ps)+3*checkpoints)
	for _, p := range ps {
		if !isCheckpoint(p) {
			out = append(out, p)
			continue
		}
		id := legacyCompactionID(p.Data)
		if id == "" {
			id = "abi1-" + strconv.FormatInt(at+int64(len(out))+2, 10)
		}
		q := jsonString(id)
		out = append(out,
			surface.Proposal{Type: surface.TypeCompactionStart,
				Data: []byte(`{"compactionId":` + q + `,"turn":` + turnJSON + `,"repairedBy":"host"}`)},
			surface.Proposal{Type: surface.TypeCompactionSummary,
				Data: []byte(`{"compactionId":` + q + `,"shadowedSeqs":[` + joinSeqs(shadowedBy(p)) + `]}`)},
			p,
			surface.Proposal{Type: surface.TypeCompactionEnd, Data: []byte(`{"compactionId":` + q + `}`)})
	}
	return out, checkpoints
}

func isCheckpoint(p surface.Proposal) bool {
	return p.Type == surface.TypeUserMessage && p.Op.Kind == surface.OpReplace
}

// shadowedBy is what a checkpoint shadows as its summary states it: the
// distinct seqs it cites, else the ends of the range it replaces.
func shadowedBy(p surface.Proposal) []int64 {
	seqs := slices.Clone(p.Sources)
	if len(seqs) == 0 {
		seqs = []int64{p.Op.Start, p.Op.End}
	}
	slices.Sort(seqs)
	return slices.Compact(seqs)
}

func joinSeqs(seqs []int64) string {
	var b []byte
	for i, s := range seqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, s, 10)
	}
	return string(b)
}

// legacyCompactionID is the checkpoint's source.compactionId, or "" when it
// has none (or its data does not decode: admission refuses it then).
func legacyCompactionID(data []byte) string {
	var m struct {
		Source struct {
			CompactionID string `json:"compactionId"`
		} `json:"source"`
	}
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	return m.Source.CompactionID
}

// jsonString is s as a JSON string (strconv.Quote writes Go escapes,
// which are not JSON for control and invalid bytes a plugin's id may hold).
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil { // invalid UTF-8: the id's bytes made valid
		b, _ = json.Marshal(strings.ToValidUTF8(s, "\ufffd"))
	}
	return string(b)
}
