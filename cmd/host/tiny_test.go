package cli

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/sdk/abi"
)

// The compilation cache tests need a module that is not yet compiled, and
// compiling the 6.7 MB first-party module takes seconds of CPU each time.
// tinyModule is a system-prompt plugin written as WebAssembly by hand, a
// few hundred bytes that compile in milliseconds: it implements the ABI
// (section 10 of docs/abi.md) with answers laid out in its data segment.

// tinyPrompt is the system prompt the tiny plugin renders.
const tinyPrompt = "You are tested by a tiny plugin."

// Where the tiny module keeps its answers and its input buffer.
const (
	tinyDescribeAt = 1024
	tinyRenderAt   = 2048
	tinyInputAt    = 65536 // page 1 on, grown to fit the request
)

// tinyModule is the module of the plugin named name: method 2 answers its
// description (a system-prompt provider, ABI minor 0), method 16 the
// prompt, every other method (init) an empty frame, status OK.
func tinyModule(name string) []byte {
	desc := (&abi.Response{Result: (&abi.Description{Name: name, Version: "1.0.0",
		Kinds: []abi.Kind{abi.KindSystemPrompt}}).Encode(nil)}).Encode(nil)
	render := (&abi.Response{Result: (&abi.RenderResult{Prompt: tinyPrompt}).Encode(nil)}).Encode(nil)
	frame := func(at int, b []byte) []byte { // i64.const (at << 32 | len)
		return append([]byte{0x42}, sleb64(int64(at)<<32|int64(len(b)))...)
	}
	const (
		i32, i64           = 0x7f, 0x7e
		end, localGet, ret = 0x0b, 0x20, 0x0f
	)
	types := section(1, 4,
		[]byte{0x60, 0, 0},           // () -> ()
		[]byte{0x60, 0, 1, i32},      // () -> i32
		[]byte{0x60, 1, i32, 1, i32}, // (i32) -> i32
		[]byte{0x60, 2, i32, i32, 1, i64})
	funcs := section(3, 4, []byte{0}, []byte{1}, []byte{2}, []byte{3})
	memory := section(5, 1, []byte{0, 1}) // one page at the start, no maximum
	exports := section(7, 5,
		cat(wname("memory"), []byte{2, 0}),
		cat(wname("_initialize"), []byte{0, 0}),
		cat(wname("weir_abi_version"), []byte{0, 1}),
		cat(wname("weir_input"), []byte{0, 2}),
		cat(wname("weir_call"), []byte{0, 3}))
	initialize := []byte{0, end}
	version := []byte{0, 0x41, 1, end} // i32.const 1
	// weir_input(size): pages = (size + 65535) >> 16 + 1; grow to that
	// many when smaller; return the buffer's address.
	input := cat([]byte{1, 1, i32}, // one i32 local
		[]byte{localGet, 0, 0x41}, sleb64(65535), []byte{0x6a, 0x41, 16, 0x76, 0x41, 1, 0x6a, 0x21, 1}, // local 1 = pages
		[]byte{0x3f, 0, localGet, 1, 0x49, 0x04, 0x40},         // if memory.size < pages
		[]byte{localGet, 1, 0x3f, 0, 0x6b, 0x40, 0, 0x1a, end}, // memory.grow(pages - size); drop
		[]byte{0x41}, sleb64(tinyInputAt), []byte{end})
	call := cat([]byte{0},
		[]byte{localGet, 0, 0x41, 2, 0x46, 0x04, 0x40}, frame(tinyDescribeAt, desc), []byte{ret, end},
		[]byte{localGet, 0, 0x41, 16, 0x46, 0x04, 0x40}, frame(tinyRenderAt, render), []byte{ret, end},
		[]byte{0x42, 0, end}) // an empty frame
	code := section(10, 4, body(initialize), body(version), body(input), body(call))
	data := section(11, 2, segment(tinyDescribeAt, desc), segment(tinyRenderAt, render))
	return cat([]byte("\x00asm\x01\x00\x00\x00"), types, funcs, memory, exports, code, data)
}

// tinyPluginDir is a folder whose weir.yaml disables the first-party
// plugins and configures the tiny one, named "tiny", as the system
// prompt: a run there compiles only the tiny module.
func tinyPluginDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tiny.wasm"), tinyModule("tiny"), 0o644))
	writeFile(t, filepath.Join(dir, "weir.yaml"), "plugins:\n"+
		"  - name: system-prompt\n    enabled: false\n"+
		"  - name: compaction-basic\n    enabled: false\n"+
		"  - name: token-meter\n    enabled: false\n"+
		"  - name: tiny\n    path: tiny.wasm\n    role: system-prompt\n")
	return dir
}

func uleb(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func sleb64(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func wname(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func section(id byte, count int, entries ...[]byte) []byte {
	b := cat(append([][]byte{uleb(uint64(count))}, entries...)...)
	return cat([]byte{id}, uleb(uint64(len(b))), b)
}

func body(code []byte) []byte { return cat(uleb(uint64(len(code))), code) }

// segment is an active data segment of memory 0 at offset at.
func segment(at int, b []byte) []byte {
	return cat([]byte{0, 0x41}, sleb64(int64(at)), []byte{0x0b}, uleb(uint64(len(b))), b)
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// TestTinyPlugin: the tiny module passes plugins verify and renders its
// prompt in a run, its only plugin.
func TestTinyPlugin(t *testing.T) {
	t.Parallel()
	dir := tinyPluginDir(t)
	r := runHost(t, dir, "", "plugins", "verify", "tiny.wasm")
	require.Equal(t, 0, r.code, r.stderr)
	r = runHost(t, dir, "", "run", "--route", "offline", "--session", "s.jsonl", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "I am the offline model", "the turn ran")
	log, err := os.ReadFile(filepath.Join(dir, "s.jsonl"))
	require.NoError(t, err)
	require.Contains(t, string(log), tinyPrompt, "the tiny plugin's prompt is node 0")
}
