package abi

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// A minimal reader of weir.proto (the subset it uses: enums, messages,
// repeated/optional labels and oneofs) so tests can check the hand-written
// codecs against the schema instead of against themselves.

type protoField struct {
	Name     string
	Num      protowire.Number
	Type     string // scalar name, enum name or message name
	Repeated bool
	Optional bool
	Oneof    string
}

type protoMessage struct {
	Name   string
	Fields []protoField
}

type protoFile struct {
	Messages map[string]*protoMessage
	Order    []string
	Enums    map[string]map[string]int32
}

var scalarTypes = map[string]bool{
	"int64": true, "uint32": true, "bool": true, "string": true, "bytes": true,
}

func (f *protoFile) isEnum(t string) bool { _, ok := f.Enums[t]; return ok }

func parseProto(t *testing.T, path string) *protoFile {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	text := regexp.MustCompile(`//[^\n]*`).ReplaceAllString(string(raw), "")
	toks := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_.]*|[0-9]+|"[^"]*"|[{}=;]`).FindAllString(text, -1)
	pf := &protoFile{Messages: map[string]*protoMessage{}, Enums: map[string]map[string]int32{}}
	pos := 0
	next := func() string {
		if pos >= len(toks) {
			t.Fatalf("weir.proto: unexpected end")
		}
		pos++
		return toks[pos-1]
	}
	expect := func(want string) {
		if got := next(); got != want {
			t.Fatalf("weir.proto: want %q, got %q near token %d", want, got, pos)
		}
	}
	number := func() int {
		n, err := strconv.Atoi(next())
		if err != nil {
			t.Fatalf("weir.proto: bad number near token %d: %v", pos, err)
		}
		return n
	}
	for pos < len(toks) {
		switch tok := next(); tok {
		case "syntax", "package", "option":
			for next() != ";" {
			}
		case "enum":
			name := next()
			expect("{")
			values := map[string]int32{}
			for {
				v := next()
				if v == "}" {
					break
				}
				expect("=")
				values[v] = int32(number())
				expect(";")
			}
			pf.Enums[name] = values
		case "message":
			msg := &protoMessage{Name: next()}
			expect("{")
			oneof := ""
			for {
				tok := next()
				if tok == "}" {
					if oneof != "" {
						oneof = ""
						continue
					}
					break
				}
				if tok == "oneof" {
					oneof = next()
					expect("{")
					continue
				}
				f := protoField{Oneof: oneof}
				switch tok {
				case "repeated":
					f.Repeated = true
					tok = next()
				case "optional":
					f.Optional = true
					tok = next()
				}
				f.Type = tok
				f.Name = next()
				expect("=")
				f.Num = protowire.Number(number())
				expect(";")
				msg.Fields = append(msg.Fields, f)
			}
			pf.Messages[msg.Name] = msg
			pf.Order = append(pf.Order, msg.Name)
		default:
			t.Fatalf("weir.proto: unexpected token %q", tok)
		}
	}
	for _, m := range pf.Messages {
		seen := map[protowire.Number]string{}
		for _, f := range m.Fields {
			if prev, dup := seen[f.Num]; dup {
				t.Fatalf("weir.proto: %s reuses number %d for %s and %s", m.Name, f.Num, prev, f.Name)
			}
			seen[f.Num] = f.Name
		}
	}
	for _, m := range pf.Messages {
		for _, f := range m.Fields {
			if !scalarTypes[f.Type] && !pf.isEnum(f.Type) && pf.Messages[f.Type] == nil {
				t.Fatalf("weir.proto: %s.%s has unknown type %s", m.Name, f.Name, f.Type)
			}
		}
	}
	return pf
}

// ---------------------------------------------------------------- generic values

// A generic value of a message is a map from proto field name to:
// int64 (int64), uint64 (uint32 and enums), bool, string, bytesVal (bytes),
// map[string]any (message) or []any (repeated). Absent fields are absent keys.
type bytesVal string

func (f *protoFile) encodeGeneric(msgName string, v map[string]any) []byte {
	var b []byte
	for _, fd := range f.Messages[msgName].Fields {
		val, ok := v[fd.Name]
		if !ok {
			continue
		}
		if fd.Repeated {
			elems := val.([]any)
			if fd.Type == "int64" || fd.Type == "uint32" || fd.Type == "bool" || f.isEnum(fd.Type) {
				var packed []byte
				for _, e := range elems {
					packed = protowire.AppendVarint(packed, scalarBits(e))
				}
				b = protowire.AppendTag(b, fd.Num, protowire.BytesType)
				b = protowire.AppendBytes(b, packed)
				continue
			}
			for _, e := range elems {
				b = f.encodeOne(b, fd, e)
			}
			continue
		}
		b = f.encodeOne(b, fd, val)
	}
	return b
}

func scalarBits(v any) uint64 {
	switch x := v.(type) {
	case int64:
		return uint64(x)
	case uint64:
		return x
	case bool:
		if x {
			return 1
		}
		return 0
	}
	panic(fmt.Sprintf("not a scalar: %T", v))
}

func (f *protoFile) encodeOne(b []byte, fd protoField, v any) []byte {
	switch x := v.(type) {
	case string:
		b = protowire.AppendTag(b, fd.Num, protowire.BytesType)
		return protowire.AppendString(b, x)
	case bytesVal:
		b = protowire.AppendTag(b, fd.Num, protowire.BytesType)
		return protowire.AppendString(b, string(x))
	case map[string]any:
		b = protowire.AppendTag(b, fd.Num, protowire.BytesType)
		return protowire.AppendBytes(b, f.encodeGeneric(fd.Type, x))
	default:
		b = protowire.AppendTag(b, fd.Num, protowire.VarintType)
		return protowire.AppendVarint(b, scalarBits(v))
	}
}

func (f *protoFile) decodeGeneric(t *testing.T, msgName string, b []byte) map[string]any {
	t.Helper()
	msg := f.Messages[msgName]
	byNum := map[protowire.Number]protoField{}
	for _, fd := range msg.Fields {
		byNum[fd.Num] = fd
	}
	out := map[string]any{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("%s: bad tag: %v", msgName, protowire.ParseError(n))
		}
		b = b[n:]
		fd, ok := byNum[num]
		if !ok {
			t.Fatalf("%s: codec wrote field %d, which weir.proto does not define", msgName, num)
		}
		var vals []any
		switch {
		case typ == protowire.VarintType:
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				t.Fatalf("%s.%s: %v", msgName, fd.Name, protowire.ParseError(n))
			}
			b = b[n:]
			vals = append(vals, f.scalarFromBits(t, msgName, fd, x))
		case typ == protowire.BytesType:
			p, n := protowire.ConsumeBytes(b)
			if n < 0 {
				t.Fatalf("%s.%s: %v", msgName, fd.Name, protowire.ParseError(n))
			}
			b = b[n:]
			switch {
			case fd.Type == "string":
				vals = append(vals, string(p))
			case fd.Type == "bytes":
				vals = append(vals, bytesVal(p))
			case f.Messages[fd.Type] != nil:
				vals = append(vals, f.decodeGeneric(t, fd.Type, p))
			case fd.Repeated:
				for len(p) > 0 {
					x, n := protowire.ConsumeVarint(p)
					if n < 0 {
						t.Fatalf("%s.%s: packed: %v", msgName, fd.Name, protowire.ParseError(n))
					}
					p = p[n:]
					vals = append(vals, f.scalarFromBits(t, msgName, fd, x))
				}
			default:
				t.Fatalf("%s.%s: %s field written as bytes", msgName, fd.Name, fd.Type)
			}
		default:
			t.Fatalf("%s.%s: unexpected wire type %d", msgName, fd.Name, typ)
		}
		if fd.Repeated {
			prev, _ := out[fd.Name].([]any)
			out[fd.Name] = append(prev, vals...)
		} else {
			if _, dup := out[fd.Name]; dup {
				t.Fatalf("%s.%s: codec wrote a singular field twice", msgName, fd.Name)
			}
			out[fd.Name] = vals[0]
		}
	}
	return out
}

func (f *protoFile) scalarFromBits(t *testing.T, msgName string, fd protoField, x uint64) any {
	switch {
	case fd.Type == "int64":
		return int64(x)
	case fd.Type == "uint32" || f.isEnum(fd.Type):
		return uint64(uint32(x))
	case fd.Type == "bool":
		return x != 0
	}
	t.Fatalf("%s.%s: %s field written as varint", msgName, fd.Name, fd.Type)
	return nil
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
