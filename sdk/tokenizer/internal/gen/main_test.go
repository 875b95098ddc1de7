package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

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
