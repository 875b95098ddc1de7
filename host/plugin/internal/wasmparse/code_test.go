package wasmparse

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// codeModule assembles a module of one type () -> () and one function per
// body; each body is given without its size and must end with 0x0b.
func codeModule(imports int, bodies ...[]byte) []byte {
	var secs [][]byte
	secs = append(secs, section(1, 1, functype(nil, nil)))
	if imports > 0 {
		var imps [][]byte
		for i := 0; i < imports; i++ {
			imps = append(imps, cat(name("env"), name(string(rune('a'+i))), []byte{0x00}, leb(0)))
		}
		secs = append(secs, section(2, uint32(imports), imps...))
	}
	funcs := make([][]byte, len(bodies))
	code := make([][]byte, len(bodies))
	for i, b := range bodies {
		funcs[i] = leb(0)
		code[i] = cat(leb(uint32(len(b))), b)
	}
	secs = append(secs, section(3, uint32(len(bodies)), funcs...), section(10, uint32(len(bodies)), code...))
	return module(secs...)
}

// nestedBody is a body with no locals and depth nested empty blocks.
func nestedBody(depth int) []byte {
	b := []byte{0x00}
	b = append(b, bytes.Repeat([]byte{0x02, 0x40}, depth)...)
	b = append(b, bytes.Repeat([]byte{0x0b}, depth)...)
	return append(b, 0x0b)
}

// flatBody is a body with no locals and n copies of instr.
func flatBody(n int, instr ...byte) []byte {
	b := append([]byte{0x00}, bytes.Repeat(instr, n)...)
	return append(b, 0x0b)
}

func checkCode(t *testing.T, wasm []byte, lim CodeLimits) (CodeStats, error) {
	t.Helper()
	m, err := Parse(wasm)
	require.NoError(t, err)
	return m.CheckCode(lim)
}

func TestCheckCodeStats(t *testing.T) {
	body := func(instrs ...byte) []byte { return append(append([]byte{0x00}, instrs...), 0x0b) }
	cases := []struct {
		name    string
		body    []byte
		depth   int
		control int
	}{
		{"empty", body(), 0, 0},
		{"block loop if else", body(0x02, 0x40, 0x03, 0x40, 0x41, 0x01, 0x04, 0x40, 0x05, 0x0b, 0x0b, 0x0b), 3, 4},
		{"br br_if br_table", body(0x02, 0x40, 0x0c, 0x00, 0x41, 0x00, 0x0d, 0x00, 0x41, 0x00, 0x0e, 0x02, 0x00, 0x00, 0x00, 0x0b), 1, 4},
		{"locals and typed block", append([]byte{0x02, 0x03, 0x7f, 0x01, 0x7e}, 0x02, 0x7f, 0x41, 0x02, 0x0b, 0x1a, 0x0b), 1, 1},
		{"block with a type index", body(0x02, 0x00, 0x0b), 1, 1},
		// Immediates that contain block opcodes must be skipped, not counted.
		{"constants", body(0x41, 0x82, 0x02, 0x1a, 0x42, 0x83, 0x83, 0x02, 0x1a, 0x43, 2, 3, 4, 2, 0x1a, 0x44, 2, 2, 2, 2, 2, 2, 2, 2, 0x1a), 0, 0},
		{"memarg", body(0x41, 0x00, 0x28, 0x02, 0x82, 0x02, 0x1a), 0, 0},
		{"memarg with a memory index", body(0x41, 0x00, 0x28, 0x42, 0x02, 0x82, 0x02, 0x1a), 0, 0},
		{"v128.const and shuffle", cat([]byte{0x00, 0xfd, 0x0c}, bytes.Repeat([]byte{0x02}, 16), []byte{0xfd, 0x0c}, bytes.Repeat([]byte{0x03}, 16),
			[]byte{0xfd, 0x0d}, bytes.Repeat([]byte{0x04}, 16), []byte{0x1a, 0x0b}), 0, 0},
		{"simd lane and load_lane", body(0x41, 0x00, 0xfd, 0x0f, 0xfd, 0x15, 0x02, 0x1a, 0x41, 0x00, 0xfd, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfd, 0x54, 0x00, 0x00, 0x03, 0x1a), 0, 0},
		{"bulk memory", body(0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 0x0a, 0x00, 0x00, 0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 0x0b, 0x00, 0xfc, 0x09, 0x02), 0, 0},
		{"saturating truncation", body(0x43, 0, 0, 0, 0, 0xfc, 0x00, 0x1a), 0, 0},
		{"atomics", body(0x41, 0, 0xfe, 0x10, 0x02, 0x03, 0x1a, 0xfe, 0x03, 0x00), 0, 0},
		{"select with types", body(0x41, 0, 0x41, 0, 0x41, 0, 0x1c, 0x01, 0x7f, 0x1a), 0, 0},
		{"call_indirect and ref.null", body(0x41, 0, 0x11, 0x00, 0x00, 0xd0, 0x70, 0x1a), 0, 0},
		{"try_table", body(0x1f, 0x40, 0x02, 0x00, 0x00, 0x00, 0x02, 0x00, 0x0b), 1, 1},
		{"legacy try catch delegate", body(0x06, 0x40, 0x07, 0x00, 0x19, 0x0b, 0x06, 0x40, 0x18, 0x00), 1, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := checkCode(t, codeModule(2, tc.body), CodeLimits{})
			require.NoError(t, err)
			want := CodeStats{Functions: 1, CodeSize: len(tc.body), MaxBodySize: len(tc.body), MaxBodyFunc: 2,
				MaxNesting: tc.depth, MaxControl: tc.control}
			if tc.depth > 0 {
				want.MaxNestingFunc = 2
			}
			if tc.control > 0 {
				want.MaxControlFunc = 2
			}
			require.Equal(t, want, st)
		})
	}
}

func TestCheckCodeLimits(t *testing.T) {
	lim := CodeLimits{MaxFunctions: 100, MaxBodySize: 512 << 10, MaxCodeSize: 1 << 20, MaxNesting: 1024, MaxControl: 4096}
	small := nestedBody(3)
	many := make([][]byte, 101)
	for i := range many {
		many[i] = small
	}
	cases := []struct {
		name string
		wasm []byte
		want string
	}{
		{"deep nesting", codeModule(3, small, nestedBody(100_000)), "control nesting depth 100000 exceeds the limit 1024 (function 4)"},
		{"nesting just over", codeModule(0, nestedBody(1025)), "control nesting depth 1025 exceeds the limit 1024 (function 0)"},
		{"too many control instructions", codeModule(0, flatBody(5000, 0x03, 0x40, 0x0b)), "control instruction count 5000 exceeds the limit 4096 (function 0)"},
		{"too many branches", codeModule(0, flatBody(5000, 0x41, 0x00, 0x0d, 0x00)), "control instruction count 5000 exceeds the limit 4096 (function 0)"},
		{"huge body", codeModule(1, small, flatBody(600_000, 0x01)), "function body size 600002 bytes exceeds the limit 524288 bytes (function 2)"},
		{"too many functions", codeModule(0, many...), "function count 101 exceeds the limit 100"},
		{"code size", codeModule(0, flatBody(400_000, 0x01), flatBody(400_000, 0x01), flatBody(400_000, 0x01)),
			"code size 1200006 bytes exceeds the limit 1048576 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkCode(t, tc.wasm, lim)
			require.EqualError(t, err, tc.want)
			var le *LimitError
			require.True(t, errors.As(err, &le))
		})
	}
	t.Run("at the limits", func(t *testing.T) {
		st, err := checkCode(t, codeModule(0, nestedBody(1024), flatBody(4096, 0x41, 0x00, 0x0d, 0x00)), lim)
		require.NoError(t, err)
		require.Equal(t, 1024, st.MaxNesting)
		require.Equal(t, 4096, st.MaxControl)
	})
	t.Run("zero is no limit", func(t *testing.T) {
		st, err := checkCode(t, codeModule(0, nestedBody(100_000)), CodeLimits{})
		require.NoError(t, err)
		require.Equal(t, 100_000, st.MaxNesting)
		require.Equal(t, uint32(0), st.MaxNestingFunc)
	})
}

func TestCheckCodeUncheckable(t *testing.T) {
	cases := []struct {
		name string
		body []byte
		want string
	}{
		{"gc opcode", []byte{0x00, 0xfb, 0x01, 0x0b}, "function 1 cannot be pre-checked: unknown opcode 0xfb 1 at body offset 1"},
		{"unassigned opcode", []byte{0x00, 0x27, 0x0b}, "function 1 cannot be pre-checked: unknown opcode 0x27 at body offset 1"},
		{"relaxed simd", []byte{0x00, 0xfd, 0x80, 0x02, 0x0b}, "function 1 cannot be pre-checked: unknown opcode 0xfd 256 at body offset 1"},
		{"simd hole", []byte{0x00, 0xfd, 0x9a, 0x01, 0x0b}, "function 1 cannot be pre-checked: unknown opcode 0xfd 154 at body offset 1"},
		{"unknown 0xfc", []byte{0x00, 0xfc, 0x20, 0x0b}, "function 1 cannot be pre-checked: unknown opcode 0xfc 32 at body offset 1"},
		{"no final end", []byte{0x00, 0x02, 0x40, 0x0b}, "function 1 cannot be pre-checked: body ends before its final end at body offset 4"},
		{"bytes after end", []byte{0x00, 0x0b, 0x01}, "function 1 cannot be pre-checked: bytes after the function's final end at body offset 2"},
		{"truncated immediate", []byte{0x00, 0x44, 0x00, 0x00}, "function 1 cannot be pre-checked: truncated instruction at body offset 1"},
		{"stray delegate", []byte{0x00, 0x18, 0x00, 0x0b}, "function 1 cannot be pre-checked: delegate outside a try block at body offset 1"},
		{"bad catch kind", []byte{0x00, 0x1f, 0x40, 0x01, 0x07, 0x0b, 0x0b}, "function 1 cannot be pre-checked: unknown catch kind 0x07 at body offset 5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkCode(t, codeModule(1, tc.body), CodeLimits{})
			require.EqualError(t, err, tc.want)
			var ue *UncheckableError
			require.True(t, errors.As(err, &ue))
		})
	}
}

func TestCheckCodeMalformedSection(t *testing.T) {
	// The code section claims a body longer than the section.
	wasm := module(section(1, 1, functype(nil, nil)), section(3, 1, leb(0)), section(10, 1, cat(leb(50), []byte{0x00, 0x0b})))
	_, err := checkCode(t, wasm, CodeLimits{})
	require.EqualError(t, err, "code section: function 0: truncated")
	// No code section: nothing to check.
	st, err := checkCode(t, module(section(1, 1, functype(nil, nil))), CodeLimits{MaxFunctions: 1})
	require.NoError(t, err)
	require.Equal(t, CodeStats{}, st)
}

// FuzzCheckCode: function bodies are untrusted; the walk never panics.
func FuzzCheckCode(f *testing.F) {
	f.Add(nestedBody(3))
	f.Add(flatBody(3, 0xfd, 0x0c, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))
	f.Add([]byte{0x00, 0x1f, 0x40, 0x02, 0x00, 0x00, 0x00, 0x02, 0x00, 0x0b, 0x0b})
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Parse(codeModule(1, body))
		if err != nil {
			return
		}
		_, _ = m.CheckCode(CodeLimits{MaxNesting: 8, MaxControl: 8})
	})
}
