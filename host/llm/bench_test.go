package llm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/weirhost/weir/host/llm/llmtest"
)

// longStream is a DeepSeek-shaped event stream of a long reply: 4,000
// reasoning chunks, 16,000 text chunks of a few words, then finish and
// usage; about 4.5 MB.
func longStream() ([]byte, []string) {
	var chunks []string
	chunks = append(chunks, llmtest.Role())
	for i := range 4000 {
		chunks = append(chunks, llmtest.Reasoning("step "+itoa(i)+" of the plan, "))
	}
	words := strings.Fields("The quick brown fox jumps over the lazy dog while the compiler \"checks\" every line\n of code.")
	for i := range 16000 {
		chunks = append(chunks, llmtest.Text(words[i%len(words)]+" "))
	}
	chunks = append(chunks, llmtest.Finish("stop"), llmtest.DeepSeekUsage(1000, 200, 20001, 4000))
	var b bytes.Buffer
	for _, c := range chunks {
		b.WriteString("data: ")
		b.WriteString(c)
		b.WriteString("\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes(), chunks
}

// BenchmarkSSEParse measures the event-stream splitter alone.
func BenchmarkSSEParse(b *testing.B) {
	body, chunks := longStream()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		s := newSSEReader(bytes.NewReader(body))
		n := 0
		for {
			_, err := s.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != len(chunks)+1 {
			b.Fatalf("got %d events, want %d", n, len(chunks)+1)
		}
	}
}

// BenchmarkStreamDecode measures what the client does per byte of a
// streamed reply: SSE split, key redaction check, chunk decode, block
// assembly and the stream record.
func BenchmarkStreamDecode(b *testing.B) {
	body, _ := longStream()
	c, err := NewClient(ClientConfig{BaseURL: "http://127.0.0.1", APIKey: testKey})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		a := &assembler{}
		rec := newRecorder(APIOpenAI, EncoderVersion)
		done, err := c.pump(bytes.NewReader(body), a, rec, func() int64 { return 7 }, func() {})
		if !done || err != nil {
			b.Fatal(done, err)
		}
		res, err := c.complete(a, true, "deepseek", rec, 9)
		if err != nil || len(res.Content) != 2 {
			b.Fatal(err, len(res.Content))
		}
	}
}

// BenchmarkClientStream measures a whole streamed reply over loopback
// HTTP against llmtest.
func BenchmarkClientStream(b *testing.B) {
	body, _ := longStream()
	srv := llmtest.NewServer(b)
	srv.SetFallback(func(int, llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Raw: []string{string(body)}}
	})
	c, err := NewClient(ClientConfig{BaseURL: srv.URL(), APIKey: testKey})
	if err != nil {
		b.Fatal(err)
	}
	req := simpleRequest("deepseek")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.Stream(context.Background(), req, nil)
		if err != nil || len(res.Content) != 2 {
			b.Fatal(err)
		}
	}
}

// BenchmarkReassemble measures rebuilding a long reply from its record.
func BenchmarkReassemble(b *testing.B) {
	body, _ := longStream()
	c, _ := NewClient(ClientConfig{BaseURL: "http://127.0.0.1"})
	a := &assembler{}
	rec := newRecorder(APIOpenAI, EncoderVersion)
	if _, err := c.pump(bytes.NewReader(body), a, rec, func() int64 { return 7 }, func() {}); err != nil {
		b.Fatal(err)
	}
	res, _ := c.complete(a, true, "deepseek", rec, 9)
	b.SetBytes(int64(len(res.Stream)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Reassemble(res.Stream); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeRequest1000 encodes a 1,000-message history with tools.
func BenchmarkEncodeRequest1000(b *testing.B) {
	req := bigRequest(1000, "deepseek")
	body, err := EncodeRequest(req)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeRequest(req); err != nil {
			b.Fatal(err)
		}
	}
}
