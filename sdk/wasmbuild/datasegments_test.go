package wasmbuild

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// sections splits a module into its sections (id and body).
func sections(t *testing.T, wasm []byte) (ids []byte, bodies [][]byte) {
	t.Helper()
	for p := 8; p < len(wasm); {
		id := wasm[p]
		size, n := binary.Uvarint(wasm[p+1:])
		require.Greater(t, n, 0)
		p += 1 + n
		ids, bodies = append(ids, id), append(bodies, wasm[p:p+int(size)])
		p += int(size)
	}
	return ids, bodies
}

// image is the initial memory the data section writes.
func image(t *testing.T, body []byte) (mem []byte, segs []segment) {
	t.Helper()
	segs, ok := activeSegments(body)
	require.True(t, ok)
	for _, s := range segs {
		end := int(s.offset) + len(s.data)
		if end > len(mem) {
			mem = append(mem, make([]byte, end-len(mem))...)
		}
		copy(mem[s.offset:], s.data)
	}
	return mem, segs
}

// A Go guest's data segments are joined into far fewer, and the module is
// otherwise the same: every other section byte for byte, and the initial
// memory the data section writes.
func TestCompactDataKeepsTheInitialMemory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "echo.wasm")
	cmd := exec.CommandContext(context.Background(), goTool(), append(append([]string{"build"}, Flags...), "-o", out, ".")...)
	cmd.Dir, cmd.Env = "testdata/echo", Env()
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	linked, err := os.ReadFile(out)
	require.NoError(t, err)

	compact, err := CompactData(linked)
	require.NoError(t, err)
	require.Less(t, len(compact), len(linked)+len(linked)/4)
	ids, bodies := sections(t, linked)
	cids, cbodies := sections(t, compact)
	require.Equal(t, ids, cids)
	for i, id := range ids {
		if id != 11 {
			require.Equal(t, bodies[i], cbodies[i], "section %d", id)
			continue
		}
		mem, segs := image(t, bodies[i])
		cmem, csegs := image(t, cbodies[i])
		require.Equal(t, mem, cmem, "initial memory")
		require.Less(t, len(csegs)*10, len(segs), "segments: %d before, %d after", len(segs), len(csegs))
		for j := 1; j < len(csegs); j++ {
			gap := int(csegs[j].offset) - int(csegs[j-1].offset) - len(csegs[j-1].data)
			require.Greater(t, gap, MaxDataGap, "segments %d and %d", j-1, j)
		}
	}
	again, err := CompactData(compact)
	require.NoError(t, err)
	require.Equal(t, compact, again, "compacting twice changes nothing")
}

// seg encodes an active segment of memory 0.
func seg(offset int32, data string) []byte {
	b := appendVarint32([]byte{0, 0x41}, offset)
	b = append(b, 0x0b)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

func module(secs ...[]byte) []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range secs {
		m = append(m, s[0])
		m = binary.AppendUvarint(m, uint64(len(s)-1))
		m = append(m, s[1:]...)
	}
	return m
}

func dataSec(segs ...[]byte) []byte {
	return append([]byte{11, byte(len(segs))}, bytes.Join(segs, nil)...)
}

func TestCompactData(t *testing.T) {
	memSec := []byte{5, 1, 0, 1} // one memory, min 1 page
	cases := []struct {
		name    string
		in, out []byte
	}{
		{"gaps up to the limit are filled, in offset order",
			module(memSec, dataSec(seg(int32(MaxDataGap+4), "c"), seg(0, "ab"), seg(int32(2+MaxDataGap), "x"), seg(300, "z"))),
			module(memSec, dataSec(seg(0, "ab"+string(make([]byte, MaxDataGap))+"x"+"\x00c"), seg(300, "z")))},
		{"one byte past the limit stays apart",
			module(memSec, dataSec(seg(0, "a"), seg(int32(1+MaxDataGap+1), "b"))),
			module(memSec, dataSec(seg(0, "a"), seg(int32(1+MaxDataGap+1), "b")))},
		{"overlapping segments are left as they are",
			module(memSec, dataSec(seg(0, "abc"), seg(1, "x"))),
			module(memSec, dataSec(seg(0, "abc"), seg(1, "x")))},
		{"a passive segment leaves the section as it is",
			module(memSec, dataSec(seg(0, "a"), []byte{1, 1, 'p'})),
			module(memSec, dataSec(seg(0, "a"), []byte{1, 1, 'p'}))},
		{"a data count section leaves the module as it is",
			module(memSec, []byte{12, 2}, dataSec(seg(0, "a"), seg(2, "b"))),
			module(memSec, []byte{12, 2}, dataSec(seg(0, "a"), seg(2, "b")))},
		{"no data section", module(memSec), module(memSec)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CompactData(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.out, got)
		})
	}
	for _, bad := range [][]byte{nil, []byte("\x7fELF\x02\x01\x01\x00"), append(module(), 11, 0x7f)} {
		_, err := CompactData(bad)
		require.Error(t, err)
	}
}
