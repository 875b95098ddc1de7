package abi

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type codec interface {
	Encode([]byte) []byte
	Decode([]byte) error
}

// goTypes maps every message of weir.proto to its Go codec. Empty, Replace
// and SeqList are carried inside Proposal and have no Go type of their own.
var goTypes = map[string]func() codec{
	"Response":          func() codec { return new(Response) },
	"Route":             func() codec { return new(Route) },
	"KeyValue":          func() codec { return new(KeyValue) },
	"Proposal":          func() codec { return new(Proposal) },
	"InitRequest":       func() codec { return new(InitRequest) },
	"InitResult":        func() codec { return new(InitResult) },
	"DescribeRequest":   func() codec { return new(DescribeRequest) },
	"Description":       func() codec { return new(Description) },
	"Section":           func() codec { return new(Section) },
	"RenderRequest":     func() codec { return new(RenderRequest) },
	"RenderResult":      func() codec { return new(RenderResult) },
	"Limits":            func() codec { return new(Limits) },
	"Failure":           func() codec { return new(Failure) },
	"CompactionRequest": func() codec { return new(CompactionRequest) },
	"CompactionResult":  func() codec { return new(CompactionResult) },
	"Event":             func() codec { return new(Event) },
	"ObserveRequest":    func() codec { return new(ObserveRequest) },
	"ObserveResult":     func() codec { return new(ObserveResult) },
	"MeasureRequest":    func() codec { return new(MeasureRequest) },
	"Baseline":          func() codec { return new(Baseline) },
	"NodeTokens":        func() codec { return new(NodeTokens) },
	"Breakdown":         func() codec { return new(Breakdown) },
	"Measurement":       func() codec { return new(Measurement) },
	"Node":              func() codec { return new(Node) },
	"NodeList":          func() codec { return new(NodeList) },
	"Generations":       func() codec { return new(Generations) },
	"SummarizeRequest":  func() codec { return new(SummarizeRequest) },
	"SummarizeResult":   func() codec { return new(SummarizeResult) },
	"EventData":         func() codec { return new(EventData) },
}

var embeddedOnly = map[string]bool{"Empty": true, "Replace": true, "SeqList": true}

func TestProtoCoversEveryCodec(t *testing.T) {
	pf := parseProto(t, "weir.proto")
	for _, name := range pf.Order {
		if embeddedOnly[name] {
			continue
		}
		require.Contains(t, goTypes, name, "weir.proto message %s has no Go codec", name)
	}
	for name := range goTypes {
		require.Contains(t, pf.Messages, name, "Go codec %s is not in weir.proto", name)
	}
}

func TestEnumsMatchProto(t *testing.T) {
	pf := parseProto(t, "weir.proto")
	want := map[string]map[string]int32{
		"Status": {
			"STATUS_OK": int32(StatusOK), "STATUS_PLUGIN_ERROR": int32(StatusPluginError),
			"STATUS_BAD_REQUEST": int32(StatusBadRequest), "STATUS_PANIC": int32(StatusPanic),
			"STATUS_UNSUPPORTED": int32(StatusUnsupported), "STATUS_STATE_UNKNOWN": int32(StatusStateUnknown),
		},
		"Kind": {
			"KIND_UNSPECIFIED": int32(KindUnspecified), "KIND_SYSTEM_PROMPT": int32(KindSystemPrompt),
			"KIND_COMPACTION": int32(KindCompaction), "KIND_TOKEN_METER": int32(KindTokenMeter),
		},
		"BaselineKind": {
			"BASELINE_NONE": int32(BaselineNone), "BASELINE_ESTIMATED": int32(BaselineEstimated),
			"BASELINE_USAGE": int32(BaselineUsage),
		},
	}
	require.Equal(t, want, pf.Enums)
}

// TestCodecsMatchProto generates random values from the .proto schema,
// encodes them with a schema-driven encoder, decodes them with the Go codec,
// compares field by field through the Go struct, re-encodes with the Go codec
// and decodes the result with a schema-driven decoder.
func TestCodecsMatchProto(t *testing.T) {
	pf := parseProto(t, "weir.proto")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range sortedKeys(goTypes) {
		t.Run(name, func(t *testing.T) {
			for i := range 200 {
				want := pf.randomValue(rng, name, 0)
				wire := pf.encodeGeneric(name, want)
				v := goTypes[name]()
				require.NoError(t, v.Decode(wire), "iteration %d", i)
				got := pf.fromGo(t, name, reflect.ValueOf(v).Elem())
				require.Equal(t, want, got, "decoded %s differs (iteration %d)", name, i)
				back := pf.decodeGeneric(t, name, v.Encode(nil))
				require.Equal(t, want, back, "re-encoded %s differs (iteration %d)", name, i)
			}
		})
	}
}

func (f *protoFile) randomValue(rng *rand.Rand, msgName string, depth int) map[string]any {
	out := map[string]any{}
	oneofDone := map[string]bool{}
	for _, fd := range f.Messages[msgName].Fields {
		if rng.IntN(3) == 0 {
			continue
		}
		if fd.Oneof != "" {
			if oneofDone[fd.Oneof] {
				continue
			}
			oneofDone[fd.Oneof] = true
		}
		if fd.Repeated {
			n := rng.IntN(4)
			if n == 0 {
				continue
			}
			elems := make([]any, n)
			for i := range elems {
				elems[i] = f.randomScalar(rng, fd, true, depth)
			}
			out[fd.Name] = elems
			continue
		}
		// Singular fields without presence only travel when non-zero, and
		// a singular message must be non-empty unless its presence counts.
		v := f.randomScalar(rng, fd, fd.Optional || fd.Oneof != "", depth)
		if m, ok := v.(map[string]any); ok && len(m) == 0 && fd.Oneof == "" && fd.Type != "SeqList" {
			continue
		}
		out[fd.Name] = v
	}
	return out
}

func (f *protoFile) randomScalar(rng *rand.Rand, fd protoField, zeroOK bool, depth int) any {
	nonZero := func() bool { return !zeroOK || rng.IntN(4) != 0 }
	switch {
	case fd.Type == "int64":
		if !nonZero() {
			return int64(0)
		}
		vals := []int64{1, -1, 127, 128, 1 << 40, -1 << 62, rng.Int64()}
		return vals[rng.IntN(len(vals))]
	case fd.Type == "uint32":
		if !nonZero() {
			return uint64(0)
		}
		return uint64(rng.Uint32()|1) & 0xffffffff
	case f.isEnum(fd.Type):
		if !nonZero() {
			return uint64(0)
		}
		return uint64(1 + rng.IntN(3))
	case fd.Type == "bool":
		return nonZero()
	case fd.Type == "string":
		if !nonZero() {
			return ""
		}
		words := []string{"a", "système", "→", strings.Repeat("x", 200), "\"json\"", "日本"}
		return words[rng.IntN(len(words))] + words[rng.IntN(len(words))]
	case fd.Type == "bytes":
		if !nonZero() {
			return bytesVal("")
		}
		p := make([]byte, 1+rng.IntN(300))
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		return bytesVal(p)
	default:
		if depth > 4 {
			return map[string]any{}
		}
		return f.randomValue(rng, fd.Type, depth+1)
	}
}

// fromGo reads a Go value into the generic form, mapping proto field names to
// Go field names (case and underscores ignored) and Has<Name> flags to
// presence. Every Go field must be claimed by a proto field.
func (f *protoFile) fromGo(t *testing.T, msgName string, v reflect.Value) map[string]any {
	t.Helper()
	if msgName == "Proposal" {
		return f.proposalFromGo(t, v.Addr().Interface().(*Proposal))
	}
	out := map[string]any{}
	claimed := map[string]bool{}
	for _, fd := range f.Messages[msgName].Fields {
		sf, ok := goField(v.Type(), fd.Name)
		if !ok {
			t.Fatalf("Go type %s has no field for %s.%s", v.Type(), msgName, fd.Name)
		}
		claimed[sf.Name] = true
		fv := v.FieldByIndex(sf.Index)
		if fd.Optional {
			has := v.FieldByName("Has" + sf.Name)
			if !has.IsValid() {
				t.Fatalf("Go type %s lacks Has%s for optional field %s", v.Type(), sf.Name, fd.Name)
			}
			claimed["Has"+sf.Name] = true
			if !has.Bool() {
				continue
			}
			out[fd.Name] = f.goScalar(t, fd, fv)
			continue
		}
		if fd.Repeated {
			if fv.Len() == 0 {
				continue
			}
			elems := make([]any, fv.Len())
			for i := range elems {
				elems[i] = f.goScalar(t, fd, fv.Index(i))
			}
			out[fd.Name] = elems
			continue
		}
		val := f.goScalar(t, fd, fv)
		if isZeroGeneric(val) {
			continue
		}
		out[fd.Name] = val
	}
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; !claimed[name] {
			t.Fatalf("Go field %s.%s is not in weir.proto message %s", v.Type(), name, msgName)
		}
	}
	return out
}

func (f *protoFile) proposalFromGo(t *testing.T, p *Proposal) map[string]any {
	out := map[string]any{}
	if p.Type != "" {
		out["type"] = p.Type
	}
	if len(p.Data) > 0 {
		out["data"] = bytesVal(p.Data)
	}
	switch p.Intent.Kind {
	case IntentAppend:
		out["append"] = map[string]any{}
	case IntentReplace:
		r := map[string]any{}
		if p.Intent.StartSeq != 0 {
			r["start_seq"] = p.Intent.StartSeq
		}
		if p.Intent.EndSeq != 0 {
			r["end_seq"] = p.Intent.EndSeq
		}
		out["replace"] = r
	}
	if p.HasSourceEventSeqs {
		s := map[string]any{}
		if len(p.SourceEventSeqs) > 0 {
			elems := make([]any, len(p.SourceEventSeqs))
			for i, v := range p.SourceEventSeqs {
				elems[i] = v
			}
			s["seqs"] = elems
		}
		out["source_event_seqs"] = s
	} else if len(p.SourceEventSeqs) > 0 {
		t.Fatalf("Proposal has seqs without HasSourceEventSeqs")
	}
	if p.Ignorable {
		out["ignorable"] = true
	}
	return out
}

func (f *protoFile) goScalar(t *testing.T, fd protoField, v reflect.Value) any {
	switch {
	case fd.Type == "int64":
		return v.Int()
	case fd.Type == "uint32" || f.isEnum(fd.Type):
		return v.Uint()
	case fd.Type == "bool":
		return v.Bool()
	case fd.Type == "string":
		return v.String()
	case fd.Type == "bytes":
		return bytesVal(v.Bytes())
	default:
		return f.fromGo(t, fd.Type, v)
	}
}

func isZeroGeneric(v any) bool {
	switch x := v.(type) {
	case int64:
		return x == 0
	case uint64:
		return x == 0
	case bool:
		return !x
	case string:
		return x == ""
	case bytesVal:
		return x == ""
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func goField(typ reflect.Type, protoName string) (reflect.StructField, bool) {
	want := strings.ReplaceAll(protoName, "_", "")
	for i := range typ.NumField() {
		sf := typ.Field(i)
		if strings.EqualFold(sf.Name, want) {
			return sf, true
		}
	}
	return reflect.StructField{}, false
}
