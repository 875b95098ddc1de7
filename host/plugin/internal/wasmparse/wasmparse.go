// Package wasmparse reads the parts of a WebAssembly binary the plugin
// loader validates before compiling: function types, imports and exports,
// and (CheckCode) the shape of the code section: function count, body
// sizes and control nesting depth. It reads the import, type, function,
// export and code sections only and skips everything else, so a module can
// be refused without paying for its compilation. It does not validate the
// module; the compiler does that.
package wasmparse

import (
	"errors"
	"fmt"
	"strings"
)

// ValueType is a WebAssembly value type byte (0x7f i32, 0x7e i64, ...).
type ValueType byte

// Value types.
const (
	I32 ValueType = 0x7f
	I64 ValueType = 0x7e
	F32 ValueType = 0x7d
	F64 ValueType = 0x7c
)

func (v ValueType) String() string {
	switch v {
	case I32:
		return "i32"
	case I64:
		return "i64"
	case F32:
		return "f32"
	case F64:
		return "f64"
	}
	return fmt.Sprintf("type(0x%02x)", byte(v))
}

// FuncType is a function signature.
type FuncType struct {
	Params  []ValueType
	Results []ValueType
}

func (f FuncType) String() string {
	join := func(vs []ValueType) string {
		s := make([]string, len(vs))
		for i, v := range vs {
			s[i] = v.String()
		}
		return strings.Join(s, ", ")
	}
	return "(" + join(f.Params) + ") -> (" + join(f.Results) + ")"
}

// Equal reports whether f and g have the same signature.
func (f FuncType) Equal(g FuncType) bool {
	if len(f.Params) != len(g.Params) || len(f.Results) != len(g.Results) {
		return false
	}
	for i := range f.Params {
		if f.Params[i] != g.Params[i] {
			return false
		}
	}
	for i := range f.Results {
		if f.Results[i] != g.Results[i] {
			return false
		}
	}
	return true
}

// ExternKind is the kind of an import or export.
type ExternKind byte

// Extern kinds.
const (
	KindFunc   ExternKind = 0
	KindTable  ExternKind = 1
	KindMemory ExternKind = 2
	KindGlobal ExternKind = 3
	KindTag    ExternKind = 4
)

func (k ExternKind) String() string {
	switch k {
	case KindFunc:
		return "function"
	case KindTable:
		return "table"
	case KindMemory:
		return "memory"
	case KindGlobal:
		return "global"
	case KindTag:
		return "tag"
	}
	return fmt.Sprintf("kind(%d)", byte(k))
}

// Import is one import of the module. Type is set for function imports.
type Import struct {
	Module, Name string
	Kind         ExternKind
	Type         FuncType
}

// Export is one export of the module. Type is set for function exports.
type Export struct {
	Name string
	Kind ExternKind
	Type FuncType
}

// Module is what Parse reads.
type Module struct {
	Imports []Import
	Exports []Export

	code          []byte // the code section's contents, for CheckCode
	importedFuncs uint32
}

// Export returns the export named name.
func (m *Module) Export(name string) (Export, bool) {
	for _, e := range m.Exports {
		if e.Name == name {
			return e, true
		}
	}
	return Export{}, false
}

// ErrNotWasm is returned for input that is not a WebAssembly binary.
var ErrNotWasm = errors.New("not a WebAssembly binary")

// Parse reads the imports and exports of the binary module b.
func Parse(b []byte) (*Module, error) {
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return nil, ErrNotWasm
	}
	if b[4] != 1 || b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return nil, fmt.Errorf("unsupported WebAssembly binary version %x", b[4:8])
	}
	r := reader{b: b[8:]}
	var (
		types   []FuncType
		funcs   []uint32 // type index of each function, imported ones first
		exports []rawExport
		mod     Module
	)
	for !r.done() {
		id := r.byte()
		size := r.u32()
		body := r.take(size)
		if r.err != nil {
			return nil, r.err
		}
		s := reader{b: body}
		switch id {
		case 1: // type
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				if form := s.byte(); form != 0x60 {
					return nil, fmt.Errorf("type %d: unsupported form 0x%02x", i, form)
				}
				types = append(types, FuncType{Params: s.valueTypes(), Results: s.valueTypes()})
			}
		case 2: // import
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				imp := Import{Module: s.name(), Name: s.name(), Kind: ExternKind(s.byte())}
				switch imp.Kind {
				case KindFunc:
					idx := s.u32()
					if s.err == nil && idx >= uint32(len(types)) {
						return nil, fmt.Errorf("import %s.%s: type index %d out of range", imp.Module, imp.Name, idx)
					}
					if s.err == nil {
						imp.Type = types[idx]
						funcs = append(funcs, idx)
						mod.importedFuncs++
					}
				case KindTable:
					s.byte() // element type
					s.limits()
				case KindMemory:
					s.limits()
				case KindGlobal:
					s.byte() // value type
					s.byte() // mutability
				case KindTag:
					s.byte() // attribute
					s.u32()  // type index
				default:
					return nil, fmt.Errorf("import %s.%s: unknown kind %d", imp.Module, imp.Name, imp.Kind)
				}
				mod.Imports = append(mod.Imports, imp)
			}
		case 3: // function
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				funcs = append(funcs, s.u32())
			}
		case 7: // export
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				exports = append(exports, rawExport{name: s.name(), kind: ExternKind(s.byte()), index: s.u32()})
			}
		case 10: // code: walked by CheckCode
			mod.code = body
		default:
			continue
		}
		if s.err != nil {
			return nil, fmt.Errorf("section %d: %w", id, s.err)
		}
	}
	for _, e := range exports {
		ex := Export{Name: e.name, Kind: e.kind}
		if e.kind == KindFunc {
			if e.index >= uint32(len(funcs)) || funcs[e.index] >= uint32(len(types)) {
				return nil, fmt.Errorf("export %q: function index %d out of range", e.name, e.index)
			}
			ex.Type = types[funcs[e.index]]
		}
		mod.Exports = append(mod.Exports, ex)
	}
	return &mod, nil
}

type rawExport struct {
	name  string
	kind  ExternKind
	index uint32
}

// reader decodes the binary format; the first error sticks.
type reader struct {
	b   []byte
	err error
}

var errTruncated = errors.New("truncated")

func (r *reader) done() bool { return r.err != nil || len(r.b) == 0 }

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.err = errTruncated
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	r.err = errors.New("LEB128 value too long")
	return 0
}

func (r *reader) take(n uint32) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)) {
		r.err = errTruncated
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) name() string { return string(r.take(r.u32())) }

func (r *reader) valueTypes() []ValueType {
	n := r.u32()
	if uint64(n) > uint64(len(r.b)) {
		r.err = errTruncated
		return nil
	}
	vs := make([]ValueType, n)
	for i := range vs {
		vs[i] = ValueType(r.byte())
	}
	return vs
}

func (r *reader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}
