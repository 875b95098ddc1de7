package v2

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/weirhost/weir/surface"
)

// FuzzConvert checks that any input is either refused with an *Error (or a
// read error) or converted into a log that reloads under the v3 rules, derives
// the v2 messages and converts identically twice. Without -fuzz only the seeds
// run.
func FuzzConvert(f *testing.F) {
	golden, err := os.ReadFile("testdata/session.v2.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add(bigLog(3))
	b := open("fz")
	b.assistant("a", "r", "c1")
	b.toolCall("c1")
	b.toolResult("r1", "c1", "x", `,"surfaceOp":"append"`)
	f.Add(b.bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		res, err := Convert(bytes.NewReader(in))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("refusal is not an *Error: %v", err)
			}
			if e.Case == CaseDerivation {
				t.Fatalf("derivation guard fired: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := Write(&out, res); err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
		events := make([]surface.Event, 0, len(lines)-1)
		for _, line := range lines[1:] {
			ev, err := surface.DecodeEvent(line)
			if err != nil {
				t.Fatalf("output line does not decode: %v\n%s", err, line)
			}
			events = append(events, ev)
		}
		log, err := surface.Restore(events)
		if err != nil {
			t.Fatalf("output does not restore: %v", err)
		}
		file, _ := Read(bytes.NewReader(in))
		if got, want := len(log.Messages()), len(file.Messages()); got != want {
			t.Fatalf("v3 derives %d messages, v2 %d", got, want)
		}
		res2, err := Convert(bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		var out2 bytes.Buffer
		Write(&out2, res2)
		if !bytes.Equal(out.Bytes(), out2.Bytes()) {
			t.Fatal("second conversion differs")
		}
	})
}
