package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// sharedData is where the shared tokenizer files live relative to this
// folder (the same path the go:generate line uses).
const sharedData = "../../../../../shared/data/deepseek-v3-tokenizer"

// TestRegenerate checks that the committed outputs are what the generator
// derives from the shared data.
func TestRegenerate(t *testing.T) {
	if _, err := os.Stat(filepath.Join(sharedData, "tokenizer.json")); err != nil {
		t.Skipf("shared tokenizer data not present at %s: %v", sharedData, err)
	}
	out := t.TempDir()
	require.NoError(t, run(sharedData, "../../testdata/oracle/classes.txt", out))
	for _, name := range []string{"data/deepseek_v3.bin.gz", "tables.go"} {
		want, err := os.ReadFile(filepath.Join("../..", name))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		require.True(t, string(want) == string(got), "%s differs from a fresh generation: run go generate in sdk/tokenizer", name)
	}
}

func TestByteDecoder(t *testing.T) {
	dec := byteDecoder()
	require.Len(t, dec, 256)
	require.Equal(t, byte(' '), dec['Ġ'])
	require.Equal(t, byte('\n'), dec['Ċ'])
	require.Equal(t, byte('a'), dec['a'])
	b, ok := decodeByteLevel(dec, "ĠHello")
	require.True(t, ok)
	require.Equal(t, " Hello", string(b))
	_, ok = decodeByteLevel(dec, "<｜User｜>")
	require.False(t, ok)
}

func TestCheckPipelineRejects(t *testing.T) {
	tf := &tokenizerFile{Normalizer: []byte(`{"type":"NFC"}`), PreTokenizer: []byte(`null`)}
	require.ErrorContains(t, checkPipeline(tf), "unsupported normalizer")
	tf = &tokenizerFile{Normalizer: []byte(`null`), PreTokenizer: []byte(`{"type":"ByteLevel"}`)}
	require.ErrorContains(t, checkPipeline(tf), "unsupported pre_tokenizer")
}

func TestReferenceBPE(t *testing.T) {
	var byteID [256]int
	for i := range byteID {
		byteID[i] = i
	}
	// merges: "a b" → 256 (rank 0), "256 b" → 257 (rank 1)
	ranks := map[pair]int{{'a', 'b'}: 0, {256, 'b'}: 1}
	require.Equal(t, []int{257, 'a'}, referenceBPE([]byte("abba"), byteID, ranks, 256))
	require.Equal(t, []int{256, 256}, referenceBPE([]byte("abab"), byteID, ranks, 256))
}
