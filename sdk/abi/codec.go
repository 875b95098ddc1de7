package abi

import (
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// Wire codecs of the messages in weir.proto. Field numbers follow the .proto;
// the package tests check every codec against it.

// ---------------------------------------------------------------- Response

// Encode appends the wire form of m to b.
func (m *Response) Encode(b []byte) []byte {
	b = putVarint(b, 1, uint64(m.Status))
	b = putString(b, 2, m.Error)
	return putBytes(b, 3, m.Result)
}

// Decode replaces m with the message decoded from b.
func (m *Response) Decode(b []byte) error {
	*m = Response{}
	d := decoder{b: b, msg: "Response"}
	for d.next() {
		switch d.num {
		case 1:
			m.Status = Status(d.uint32())
		case 2:
			m.Error = d.string()
		case 3:
			m.Result = d.bytes()
		default:
			d.skip()
		}
	}
	return d.err
}

// ---------------------------------------------------------------- Route

func (m *Route) isZero() bool { return m.Provider == "" && m.Model == "" }

// Encode appends the wire form of m to b.
func (m *Route) Encode(b []byte) []byte {
	b = putString(b, 1, m.Provider)
	return putString(b, 2, m.Model)
}

// Decode replaces m with the message decoded from b.
func (m *Route) Decode(b []byte) error {
	*m = Route{}
	d := decoder{b: b, msg: "Route"}
	for d.next() {
		switch d.num {
		case 1:
			m.Provider = d.string()
		case 2:
			m.Model = d.string()
		default:
			d.skip()
		}
	}
	return d.err
}

func putRoute(b []byte, num protowire.Number, r *Route) []byte {
	if r.isZero() {
		return b
	}
	b, start := openMessage(b, num)
	b = r.Encode(b)
	return closeMessage(b, start)
}

// ---------------------------------------------------------------- KeyValue

// Encode appends the wire form of m to b.
func (m *KeyValue) Encode(b []byte) []byte {
	b = putString(b, 1, m.Key)
	return putString(b, 2, m.Value)
}

// Decode replaces m with the message decoded from b.
func (m *KeyValue) Decode(b []byte) error {
	*m = KeyValue{}
	d := decoder{b: b, msg: "KeyValue"}
	for d.next() {
		switch d.num {
		case 1:
			m.Key = d.string()
		case 2:
			m.Value = d.string()
		default:
			d.skip()
		}
	}
	return d.err
}

// ---------------------------------------------------------------- Proposal

// Encode appends the wire form of m to b.
func (m *Proposal) Encode(b []byte) []byte {
	b = putString(b, 1, m.Type)
	b = putBytes(b, 2, m.Data)
	switch m.Intent.Kind {
	case IntentAppend:
		b = putBytesAlways(b, 3, nil) // Empty
	case IntentReplace:
		var start int
		b, start = openMessage(b, 4)
		b = putInt64(b, 1, m.Intent.StartSeq)
		b = putInt64(b, 2, m.Intent.EndSeq)
		b = closeMessage(b, start)
	}
	if m.HasSourceEventSeqs {
		var start int
		b, start = openMessage(b, 5)
		b = putPackedInt64(b, 1, m.SourceEventSeqs)
		b = closeMessage(b, start)
	}
	return putBool(b, 6, m.Ignorable)
}

// Decode replaces m with the message decoded from b.
func (m *Proposal) Decode(b []byte) error {
	seqs := m.SourceEventSeqs[:0]
	*m = Proposal{}
	d := decoder{b: b, msg: "Proposal"}
	for d.next() {
		switch d.num {
		case 1:
			m.Type = d.string()
		case 2:
			m.Data = d.bytes()
		case 3:
			d.message(decodeEmpty)
			m.Intent = Intent{Kind: IntentAppend}
		case 4:
			m.Intent = Intent{Kind: IntentReplace}
			d.message(m.Intent.decodeReplace)
		case 5:
			m.HasSourceEventSeqs = true
			d.message(func(p []byte) error {
				var err error
				seqs, err = decodeSeqList(p, seqs)
				return err
			})
		case 6:
			m.Ignorable = d.bool()
		default:
			d.skip()
		}
	}
	if m.HasSourceEventSeqs {
		m.SourceEventSeqs = seqs
	}
	return d.err
}

func decodeEmpty(b []byte) error {
	d := decoder{b: b, msg: "Empty"}
	for d.next() {
		d.skip()
	}
	return d.err
}

func (it *Intent) decodeReplace(b []byte) error {
	d := decoder{b: b, msg: "Replace"}
	for d.next() {
		switch d.num {
		case 1:
			it.StartSeq = d.int64()
		case 2:
			it.EndSeq = d.int64()
		default:
			d.skip()
		}
	}
	return d.err
}

func decodeSeqList(b []byte, dst []int64) ([]int64, error) {
	d := decoder{b: b, msg: "SeqList"}
	for d.next() {
		switch d.num {
		case 1:
			dst = d.int64s(dst)
		default:
			d.skip()
		}
	}
	return dst, d.err
}

// ---------------------------------------------------------------- InitRequest / InitResult

// Encode appends the wire form of m to b.
func (m *InitRequest) Encode(b []byte) []byte {
	b = putString(b, 1, m.Plugin)
	b = putBytes(b, 2, m.Config)
	b = putVarint(b, 3, uint64(m.AbiMajor))
	return putVarint(b, 4, uint64(m.AbiMinor))
}

// Decode replaces m with the message decoded from b.
func (m *InitRequest) Decode(b []byte) error {
	*m = InitRequest{}
	d := decoder{b: b, msg: "InitRequest"}
	for d.next() {
		switch d.num {
		case 1:
			m.Plugin = d.string()
		case 2:
			m.Config = d.bytes()
		case 3:
			m.AbiMajor = d.uint32()
		case 4:
			m.AbiMinor = d.uint32()
		default:
			d.skip()
		}
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *InitResult) Encode(b []byte) []byte { return b }

// Decode replaces m with the message decoded from b.
func (m *InitResult) Decode(b []byte) error {
	d := decoder{b: b, msg: "InitResult"}
	for d.next() {
		d.skip()
	}
	return d.err
}

// ---------------------------------------------------------------- DescribeRequest / Description

// Encode appends the wire form of m to b.
func (m *DescribeRequest) Encode(b []byte) []byte { return b }

// Decode replaces m with the message decoded from b.
func (m *DescribeRequest) Decode(b []byte) error {
	d := decoder{b: b, msg: "DescribeRequest"}
	for d.next() {
		d.skip()
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *Description) Encode(b []byte) []byte {
	b = putString(b, 1, m.Name)
	b = putString(b, 2, m.Version)
	b = putPackedKinds(b, 3, m.Kinds)
	b = putVarint(b, 4, uint64(m.AbiMinor))
	b = putString(b, 5, m.Sdk)
	for _, e := range m.Events {
		b = putStringAlways(b, 6, e)
	}
	b = putBool(b, 7, m.RenderOnChange)
	b = putBool(b, 8, m.WarmState)
	return putPackedUint32s(b, 9, m.Methods)
}

// Decode replaces m with the message decoded from b.
func (m *Description) Decode(b []byte) error {
	kinds := m.Kinds[:0]
	methods := m.Methods[:0]
	events := reserve(m.Events, count(b, 6))
	*m = Description{}
	d := decoder{b: b, msg: "Description"}
	for d.next() {
		switch d.num {
		case 1:
			m.Name = d.string()
		case 2:
			m.Version = d.string()
		case 3:
			kinds = d.kinds(kinds)
		case 4:
			m.AbiMinor = d.uint32()
		case 5:
			m.Sdk = d.string()
		case 6:
			events = append(events, d.string())
		case 7:
			m.RenderOnChange = d.bool()
		case 8:
			m.WarmState = d.bool()
		case 9:
			methods = uint32s(&d, methods)
		default:
			d.skip()
		}
	}
	if len(kinds) > 0 {
		m.Kinds = kinds
	}
	if len(methods) > 0 {
		m.Methods = methods
	}
	if len(events) > 0 {
		m.Events = events
	}
	return d.err
}

// ---------------------------------------------------------------- Section / RenderRequest / RenderResult

// Encode appends the wire form of m to b.
func (m *Section) Encode(b []byte) []byte {
	b = putString(b, 1, m.Key)
	return putString(b, 2, m.Text)
}

// Decode replaces m with the message decoded from b.
func (m *Section) Decode(b []byte) error {
	*m = Section{}
	d := decoder{b: b, msg: "Section"}
	for d.next() {
		switch d.num {
		case 1:
			m.Key = d.string()
		case 2:
			m.Text = d.string()
		default:
			d.skip()
		}
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *RenderRequest) Encode(b []byte) []byte {
	var start int
	for i := range m.Sections {
		b, start = openMessage(b, 1)
		b = m.Sections[i].Encode(b)
		b = closeMessage(b, start)
	}
	b = putRoute(b, 2, &m.Route)
	for i := range m.HostData {
		b, start = openMessage(b, 3)
		b = m.HostData[i].Encode(b)
		b = closeMessage(b, start)
	}
	return b
}

// Decode replaces m with the message decoded from b.
func (m *RenderRequest) Decode(b []byte) error {
	sections, hostData := reserve(m.Sections, count(b, 1)), reserve(m.HostData, count(b, 3))
	*m = RenderRequest{}
	d := decoder{b: b, msg: "RenderRequest"}
	for d.next() {
		switch d.num {
		case 1:
			sections = append(sections, Section{})
			d.message(sections[len(sections)-1].Decode)
		case 2:
			d.message(m.Route.Decode)
		case 3:
			hostData = append(hostData, KeyValue{})
			d.message(hostData[len(hostData)-1].Decode)
		default:
			d.skip()
		}
	}
	if len(sections) > 0 {
		m.Sections = sections
	}
	if len(hostData) > 0 {
		m.HostData = hostData
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *RenderResult) Encode(b []byte) []byte {
	return putString(b, 1, m.Prompt)
}

// Decode replaces m with the message decoded from b.
func (m *RenderResult) Decode(b []byte) error {
	*m = RenderResult{}
	d := decoder{b: b, msg: "RenderResult"}
	for d.next() {
		switch d.num {
		case 1:
			m.Prompt = d.string()
		default:
			d.skip()
		}
	}
	return d.err
}

// ---------------------------------------------------------------- Limits / Failure

// Encode appends the wire form of m to b.
func (m *Limits) Encode(b []byte) []byte {
	b = putInt64(b, 1, m.ContextWindow)
	return putInt64(b, 2, m.DefaultMaxTokens)
}

// Decode replaces m with the message decoded from b.
func (m *Limits) Decode(b []byte) error {
	*m = Limits{}
	d := decoder{b: b, msg: "Limits"}
	for d.next() {
		switch d.num {
		case 1:
			m.ContextWindow = d.int64()
		case 2:
			m.DefaultMaxTokens = d.int64()
		default:
			d.skip()
		}
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *Failure) Encode(b []byte) []byte {
	b = putString(b, 1, m.Code)
	return putString(b, 2, m.Message)
}

// Decode replaces m with the message decoded from b.
func (m *Failure) Decode(b []byte) error {
	*m = Failure{}
	d := decoder{b: b, msg: "Failure"}
	for d.next() {
		switch d.num {
		case 1:
			m.Code = d.string()
		case 2:
			m.Message = d.string()
		default:
			d.skip()
		}
	}
	return d.err
}

// ---------------------------------------------------------------- CompactionRequest / CompactionResult

// Encode appends the wire form of m to b.
func (m *CompactionRequest) Encode(b []byte) []byte {
	var start int
	b = putInt64(b, 1, m.Turn)
	b = putInt64(b, 2, m.Step)
	b = putRoute(b, 3, &m.Route)
	if m.Limits != (Limits{}) {
		b, start = openMessage(b, 4)
		b = m.Limits.Encode(b)
		b = closeMessage(b, start)
	}
	b = putString(b, 5, m.CommandID)
	if m.Failure != (Failure{}) {
		b, start = openMessage(b, 6)
		b = m.Failure.Encode(b)
		b = closeMessage(b, start)
	}
	b = putBytes(b, 7, m.State)
	b = putInt64(b, 8, m.RegionStartSeq)
	return putInt64(b, 9, m.RegionEndSeq)
}

// Decode replaces m with the message decoded from b.
func (m *CompactionRequest) Decode(b []byte) error {
	*m = CompactionRequest{}
	d := decoder{b: b, msg: "CompactionRequest"}
	for d.next() {
		switch d.num {
		case 1:
			m.Turn = d.int64()
		case 2:
			m.Step = d.int64()
		case 3:
			d.message(m.Route.Decode)
		case 4:
			d.message(m.Limits.Decode)
		case 5:
			m.CommandID = d.string()
		case 6:
			d.message(m.Failure.Decode)
		case 7:
			m.State = d.bytes()
		case 8:
			m.RegionStartSeq = d.int64()
		case 9:
			m.RegionEndSeq = d.int64()
		default:
			d.skip()
		}
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *CompactionResult) Encode(b []byte) []byte {
	var start int
	for i := range m.Proposals {
		b, start = openMessage(b, 1)
		b = m.Proposals[i].Encode(b)
		b = closeMessage(b, start)
	}
	if m.HasState {
		b = putBytesAlways(b, 2, m.State)
	}
	if m.HasIdleBelowTokens {
		b = putInt64Always(b, 3, m.IdleBelowTokens)
	}
	return b
}

// Decode replaces m with the message decoded from b.
func (m *CompactionResult) Decode(b []byte) error {
	n := count(b, 1)
	if n > MaxProposals {
		return &DecodeError{Message: "CompactionResult", Field: 1, Reason: "more than " + strconv.Itoa(MaxProposals) + " proposals"}
	}
	proposals := reserve(m.Proposals, n)
	*m = CompactionResult{}
	d := decoder{b: b, msg: "CompactionResult"}
	for d.next() {
		switch d.num {
		case 1:
			proposals = append(proposals, Proposal{})
			d.message(proposals[len(proposals)-1].Decode)
		case 2:
			m.State = d.bytesPresent()
			m.HasState = true
		case 3:
			m.IdleBelowTokens = d.int64()
			m.HasIdleBelowTokens = true
		default:
			d.skip()
		}
	}
	if len(proposals) > 0 {
		m.Proposals = proposals
	}
	return d.err
}

// ---------------------------------------------------------------- EventData

// Encode appends the wire form of m to b.
func (m *EventData) Encode(b []byte) []byte {
	b = putInt64(b, 1, m.Seq)
	b = putString(b, 2, m.Type)
	return putBytes(b, 3, m.Data)
}

// Decode replaces m with the message decoded from b.
func (m *EventData) Decode(b []byte) error {
	*m = EventData{}
	d := decoder{b: b, msg: "EventData"}
	for d.next() {
		switch d.num {
		case 1:
			m.Seq = d.int64()
		case 2:
			m.Type = d.string()
		case 3:
			m.Data = d.bytes()
		default:
			d.skip()
		}
	}
	return d.err
}

// ---------------------------------------------------------------- Event / ObserveRequest / ObserveResult

// Encode appends the wire form of m to b.
func (m *Event) Encode(b []byte) []byte {
	b = putInt64(b, 1, m.Seq)
	b = putString(b, 2, m.Type)
	b = putBytes(b, 3, m.JSON)
	if m.HasData {
		b = putBytesAlways(b, 4, m.Data)
	}
	b = putVarint(b, 5, uint64(m.SurfaceOp))
	b = putInt64(b, 6, m.ReplaceStartSeq)
	return putInt64(b, 7, m.ReplaceEndSeq)
}

// Decode replaces m with the message decoded from b.
func (m *Event) Decode(b []byte) error {
	*m = Event{}
	d := decoder{b: b, msg: "Event"}
	for d.next() {
		switch d.num {
		case 1:
			m.Seq = d.int64()
		case 2:
			m.Type = d.string()
		case 3:
			m.JSON = d.bytes()
		case 4:
			m.Data, m.HasData = d.bytesPresent(), true
		case 5:
			m.SurfaceOp = d.uint32()
		case 6:
			m.ReplaceStartSeq = d.int64()
		case 7:
			m.ReplaceEndSeq = d.int64()
		default:
			d.skip()
		}
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *ObserveRequest) Encode(b []byte) []byte {
	b = putBytes(b, 1, m.State)
	var start int
	for i := range m.Events {
		b, start = openMessage(b, 2)
		b = m.Events[i].Encode(b)
		b = closeMessage(b, start)
	}
	b = putInt64(b, 3, m.StateKey)
	b = putInt64(b, 4, m.NextStateKey)
	b = putBool(b, 5, m.StateOptional)
	return putBool(b, 6, m.MeasureTotals)
}

// Decode replaces m with the message decoded from b.
func (m *ObserveRequest) Decode(b []byte) error {
	events := reserve(m.Events, count(b, 2))
	*m = ObserveRequest{}
	d := decoder{b: b, msg: "ObserveRequest"}
	for d.next() {
		switch d.num {
		case 1:
			m.State = d.bytes()
		case 2:
			events = append(events, Event{})
			d.message(events[len(events)-1].Decode)
		case 3:
			m.StateKey = d.int64()
		case 4:
			m.NextStateKey = d.int64()
		case 5:
			m.StateOptional = d.bool()
		case 6:
			m.MeasureTotals = d.bool()
		default:
			d.skip()
		}
	}
	if len(events) > 0 {
		m.Events = events
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *ObserveResult) Encode(b []byte) []byte {
	b = putBytes(b, 1, m.State)
	b = putBool(b, 2, m.StateKept)
	if m.HasTotals {
		var start int
		b, start = openMessage(b, 3)
		b = m.Totals.Encode(b)
		b = closeMessage(b, start)
	}
	return b
}

// Decode replaces m with the message decoded from b.
func (m *ObserveResult) Decode(b []byte) error {
	*m = ObserveResult{}
	d := decoder{b: b, msg: "ObserveResult"}
	for d.next() {
		switch d.num {
		case 1:
			m.State = d.bytes()
		case 2:
			m.StateKept = d.bool()
		case 3:
			m.HasTotals = true
			d.message(m.Totals.Decode)
		default:
			d.skip()
		}
	}
	return d.err
}

// ---------------------------------------------------------------- MeasureRequest / Measurement

// Encode appends the wire form of m to b.
func (m *MeasureRequest) Encode(b []byte) []byte {
	b = putBytes(b, 1, m.State)
	if m.HasHeaderOverride {
		b = putBytesAlways(b, 2, m.HeaderOverride)
	}
	b = putInt64(b, 3, m.StateKey)
	return putBool(b, 4, m.TotalsOnly)
}

// Decode replaces m with the message decoded from b.
func (m *MeasureRequest) Decode(b []byte) error {
	*m = MeasureRequest{}
	d := decoder{b: b, msg: "MeasureRequest"}
	for d.next() {
		switch d.num {
		case 1:
			m.State = d.bytes()
		case 2:
			m.HeaderOverride = d.bytesPresent()
			m.HasHeaderOverride = true
		case 3:
			m.StateKey = d.int64()
		case 4:
			m.TotalsOnly = d.bool()
		default:
			d.skip()
		}
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *Baseline) Encode(b []byte) []byte {
	b = putVarint(b, 1, uint64(m.Kind))
	return putInt64(b, 2, m.Tokens)
}

// Decode replaces m with the message decoded from b.
func (m *Baseline) Decode(b []byte) error {
	*m = Baseline{}
	d := decoder{b: b, msg: "Baseline"}
	for d.next() {
		switch d.num {
		case 1:
			m.Kind = BaselineKind(d.uint32())
		case 2:
			m.Tokens = d.int64()
		default:
			d.skip()
		}
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *NodeTokens) Encode(b []byte) []byte {
	b = putInt64(b, 1, m.Seq)
	b = putInt64(b, 2, m.Tokens)
	return putInt64(b, 3, m.HeuristicTokens)
}

// Decode replaces m with the message decoded from b.
func (m *NodeTokens) Decode(b []byte) error {
	*m = NodeTokens{}
	d := decoder{b: b, msg: "NodeTokens"}
	for d.next() {
		switch d.num {
		case 1:
			m.Seq = d.int64()
		case 2:
			m.Tokens = d.int64()
		case 3:
			m.HeuristicTokens = d.int64()
		default:
			d.skip()
		}
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *Breakdown) Encode(b []byte) []byte {
	b = putInt64(b, 1, m.SystemTokens)
	b = putInt64(b, 2, m.ToolsTokens)
	b = putInt64(b, 3, m.MessageTokens)
	b = putInt64(b, 4, m.UserTokens)
	b = putInt64(b, 5, m.AssistantTokens)
	return putInt64(b, 6, m.ToolResultTokens)
}

// Decode replaces m with the message decoded from b.
func (m *Breakdown) Decode(b []byte) error {
	*m = Breakdown{}
	d := decoder{b: b, msg: "Breakdown"}
	for d.next() {
		switch d.num {
		case 1:
			m.SystemTokens = d.int64()
		case 2:
			m.ToolsTokens = d.int64()
		case 3:
			m.MessageTokens = d.int64()
		case 4:
			m.UserTokens = d.int64()
		case 5:
			m.AssistantTokens = d.int64()
		case 6:
			m.ToolResultTokens = d.int64()
		default:
			d.skip()
		}
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *Measurement) Encode(b []byte) []byte {
	var start int
	b = putInt64(b, 1, m.LogRevision)
	if m.Baseline != (Baseline{}) {
		b, start = openMessage(b, 2)
		b = m.Baseline.Encode(b)
		b = closeMessage(b, start)
	}
	b = putInt64(b, 3, m.SurfaceDeltaTokens)
	b = putInt64(b, 4, m.TotalTokens)
	b = putInt64(b, 5, m.SurfaceTokens)
	for i := range m.Nodes {
		b, start = openMessage(b, 6)
		b = m.Nodes[i].Encode(b)
		b = closeMessage(b, start)
	}
	if m.Breakdown != (Breakdown{}) {
		b, start = openMessage(b, 7)
		b = m.Breakdown.Encode(b)
		b = closeMessage(b, start)
	}
	if m.HasEstimateError {
		b = putInt64Always(b, 8, m.EstimateError)
	}
	return putString(b, 9, m.Tokenizer)
}

// Decode replaces m with the message decoded from b.
func (m *Measurement) Decode(b []byte) error {
	nodes := reserve(m.Nodes, count(b, 6))
	*m = Measurement{}
	d := decoder{b: b, msg: "Measurement"}
	for d.next() {
		switch d.num {
		case 1:
			m.LogRevision = d.int64()
		case 2:
			d.message(m.Baseline.Decode)
		case 3:
			m.SurfaceDeltaTokens = d.int64()
		case 4:
			m.TotalTokens = d.int64()
		case 5:
			m.SurfaceTokens = d.int64()
		case 6:
			nodes = append(nodes, NodeTokens{})
			d.message(nodes[len(nodes)-1].Decode)
		case 7:
			d.message(m.Breakdown.Decode)
		case 8:
			m.EstimateError = d.int64()
			m.HasEstimateError = true
		case 9:
			m.Tokenizer = d.string()
		default:
			d.skip()
		}
	}
	if len(nodes) > 0 {
		m.Nodes = nodes
	}
	return d.err
}

// ---------------------------------------------------------------- Node / NodeList / Generations

// Encode appends the wire form of m to b.
func (m *Node) Encode(b []byte) []byte {
	b = putInt64(b, 1, m.Seq)
	b = putString(b, 2, m.Type)
	b = putString(b, 3, m.Role)
	b = putInt64(b, 4, m.Size)
	b = putBytes(b, 5, m.ContentHash)
	if m.HasTokens {
		b = putInt64Always(b, 6, m.Tokens)
	}
	return b
}

// Decode replaces m with the message decoded from b.
func (m *Node) Decode(b []byte) error {
	*m = Node{}
	d := decoder{b: b, msg: "Node"}
	for d.next() {
		switch d.num {
		case 1:
			m.Seq = d.int64()
		case 2:
			m.Type = d.string()
		case 3:
			m.Role = d.string()
		case 4:
			m.Size = d.int64()
		case 5:
			m.ContentHash = d.bytes()
		case 6:
			m.Tokens = d.int64()
			m.HasTokens = true
		default:
			d.skip()
		}
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *NodeList) Encode(b []byte) []byte {
	var start int
	for i := range m.Nodes {
		b, start = openMessage(b, 1)
		b = m.Nodes[i].Encode(b)
		b = closeMessage(b, start)
	}
	return b
}

// Decode replaces m with the message decoded from b.
func (m *NodeList) Decode(b []byte) error {
	nodes := reserve(m.Nodes, count(b, 1))
	*m = NodeList{}
	d := decoder{b: b, msg: "NodeList"}
	for d.next() {
		switch d.num {
		case 1:
			nodes = append(nodes, Node{})
			d.message(nodes[len(nodes)-1].Decode)
		default:
			d.skip()
		}
	}
	if len(nodes) > 0 {
		m.Nodes = nodes
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *Generations) Encode(b []byte) []byte {
	b = putInt64(b, 1, m.Replace)
	b = putInt64(b, 2, m.Content)
	return putInt64(b, 3, m.LogLength)
}

// Decode replaces m with the message decoded from b.
func (m *Generations) Decode(b []byte) error {
	*m = Generations{}
	d := decoder{b: b, msg: "Generations"}
	for d.next() {
		switch d.num {
		case 1:
			m.Replace = d.int64()
		case 2:
			m.Content = d.int64()
		case 3:
			m.LogLength = d.int64()
		default:
			d.skip()
		}
	}
	return d.err
}

// ---------------------------------------------------------------- SummarizeRequest / SummarizeResult

// Encode appends the wire form of m to b.
func (m *SummarizeRequest) Encode(b []byte) []byte {
	for _, msg := range m.Messages {
		b = putBytesAlways(b, 1, msg)
	}
	b = putBytes(b, 2, m.Tools)
	b = putString(b, 3, m.Instruction)
	b = putRoute(b, 4, &m.Route)
	return putInt64(b, 5, m.MaxTokens)
}

// Decode replaces m with the message decoded from b.
func (m *SummarizeRequest) Decode(b []byte) error {
	messages := reserve(m.Messages, count(b, 1))
	*m = SummarizeRequest{}
	d := decoder{b: b, msg: "SummarizeRequest"}
	for d.next() {
		switch d.num {
		case 1:
			messages = append(messages, d.bytesPresent())
		case 2:
			m.Tools = d.bytes()
		case 3:
			m.Instruction = d.string()
		case 4:
			d.message(m.Route.Decode)
		case 5:
			m.MaxTokens = d.int64()
		default:
			d.skip()
		}
	}
	if len(messages) > 0 {
		m.Messages = messages
	}
	return d.err
}

// Encode appends the wire form of m to b.
func (m *SummarizeResult) Encode(b []byte) []byte {
	for _, s := range m.Text {
		b = putStringAlways(b, 1, s)
	}
	b = putBytes(b, 2, m.RawOutput)
	b = putBytes(b, 3, m.Usage)
	b = putRoute(b, 4, &m.Route)
	b = putString(b, 5, m.FinishReason)
	return putBool(b, 6, m.LLMStreamCall)
}

// Decode replaces m with the message decoded from b.
func (m *SummarizeResult) Decode(b []byte) error {
	text := reserve(m.Text, count(b, 1))
	*m = SummarizeResult{}
	d := decoder{b: b, msg: "SummarizeResult"}
	for d.next() {
		switch d.num {
		case 1:
			text = append(text, d.string())
		case 2:
			m.RawOutput = d.bytes()
		case 3:
			m.Usage = d.bytes()
		case 4:
			d.message(m.Route.Decode)
		case 5:
			m.FinishReason = d.string()
		case 6:
			m.LLMStreamCall = d.bool()
		default:
			d.skip()
		}
	}
	if len(text) > 0 {
		m.Text = text
	}
	return d.err
}
