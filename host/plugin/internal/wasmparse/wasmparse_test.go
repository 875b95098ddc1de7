package wasmparse

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Helpers that assemble binary modules section by section.

func leb(v uint32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func name(s string) []byte { return append(leb(uint32(len(s))), s...) }

func section(id byte, count uint32, entries ...[]byte) []byte {
	body := leb(count)
	for _, e := range entries {
		body = append(body, e...)
	}
	return append(append([]byte{id}, leb(uint32(len(body)))...), body...)
}

func functype(params, results []ValueType) []byte {
	b := []byte{0x60}
	b = append(b, leb(uint32(len(params)))...)
	for _, p := range params {
		b = append(b, byte(p))
	}
	b = append(b, leb(uint32(len(results)))...)
	for _, r := range results {
		b = append(b, byte(r))
	}
	return b
}

func module(sections ...[]byte) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		b = append(b, s...)
	}
	return b
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestParse(t *testing.T) {
	m := module(
		section(1, 2, functype([]ValueType{I32, I32}, []ValueType{I64}), functype(nil, nil)),
		section(0x00, 0, name("custom")), // a custom section is skipped
		section(2, 3,
			cat(name("wasi_snapshot_preview1"), name("fd_write"), []byte{0x00}, leb(0)),
			cat(name("env"), name("mem"), []byte{0x02, 0x01}, leb(1), leb(2)),
			cat(name("env"), name("g"), []byte{0x03, 0x7f, 0x00}),
		),
		section(3, 1, leb(1)),
		section(7, 3,
			cat(name("run"), []byte{0x00}, leb(1)),
			cat(name("call"), []byte{0x00}, leb(0)),
			cat(name("memory"), []byte{0x02}, leb(0)),
		),
	)
	got, err := Parse(m)
	require.NoError(t, err)
	require.Equal(t, []Import{
		{Module: "wasi_snapshot_preview1", Name: "fd_write", Kind: KindFunc, Type: FuncType{Params: []ValueType{I32, I32}, Results: []ValueType{I64}}},
		{Module: "env", Name: "mem", Kind: KindMemory},
		{Module: "env", Name: "g", Kind: KindGlobal},
	}, got.Imports)
	run, ok := got.Export("run")
	require.True(t, ok)
	require.Equal(t, FuncType{Params: []ValueType{}, Results: []ValueType{}}, run.Type)
	require.True(t, run.Type.Equal(FuncType{}))
	call, _ := got.Export("call")
	require.Equal(t, "(i32, i32) -> (i64)", call.Type.String(), "index 0 is the imported function")
	mem, _ := got.Export("memory")
	require.Equal(t, KindMemory, mem.Kind)
	_, ok = got.Export("missing")
	require.False(t, ok)
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "not a WebAssembly binary"},
		{"bad magic", []byte("\x00wasm\x01\x00\x00"), "not a WebAssembly binary"},
		{"version 2", []byte("\x00asm\x02\x00\x00\x00"), "unsupported WebAssembly binary version 02000000"},
		{"truncated section", append(module(), 0x01, 0x10, 0x00), "truncated"},
		{"bad type form", module(section(1, 1, []byte{0x50, 0, 0})), "type 0: unsupported form 0x50"},
		{"import type out of range", module(section(2, 1, cat(name("a"), name("b"), []byte{0x00}, leb(3)))), "import a.b: type index 3 out of range"},
		{"unknown import kind", module(section(2, 1, cat(name("a"), name("b"), []byte{0x09}))), "import a.b: unknown kind 9"},
		{"export out of range", module(section(7, 1, cat(name("f"), []byte{0x00}, leb(0)))), `export "f": function index 0 out of range`},
		{"leb too long", module([]byte{0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}), "LEB128 value too long"},
		{"huge vector claim", module(section(1, 1, []byte{0x60, 0xff, 0xff, 0xff, 0xff, 0x0f})), "section 1: truncated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.in)
			require.EqualError(t, err, tc.want)
		})
	}
}

// FuzzParse: module bytes are untrusted; parsing never panics.
func FuzzParse(f *testing.F) {
	f.Add(module(section(1, 1, functype([]ValueType{I32}, []ValueType{I32})), section(3, 1, leb(0)),
		section(7, 1, cat(name("f"), []byte{0x00}, leb(0)))))
	f.Add(module(section(2, 1, cat(name("a"), name("b"), []byte{0x01, 0x70, 0x00}, leb(1)))))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err == nil && m == nil {
			t.Fatal("nil module without error")
		}
	})
}
