package tokenizer

import (
	"testing"
	"unicode/utf8"
)

// FuzzEncode checks that any input encodes without panicking, that Count
// agrees with Encode, that every id is valid, and that decoding gives back
// the (sanitized) input. Normal runs only try the seeds; fuzz with
//
//	go test -run XXX -fuzz FuzzEncode -fuzztime 60s -fuzzminimizetime 100x ./sdk/tokenizer
//
// (a small -fuzzminimizetime keeps the minimizer from stalling the run).
func FuzzEncode(f *testing.F) {
	for _, s := range []string{
		"", "Hello world", "  x\n\n  y ", "abc123456def", "<｜User｜>hi<|EOT|>", "<｜User", "你好こんにちは",
		"'S 'll 'Ve", "\r\n\t \u00a0\u3000", "a\u0301\u0302", "👨‍👩‍👧‍👦", "\xed\xa0\x80", "\xf0\x9f\x98", "\xff\xfe",
		"1234567890", "١٢٣٤٥", "...!!!???", "func main() {\n\treturn\n}\n",
	} {
		f.Add(s)
	}
	tok := DeepSeekV3()
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		if n := tok.Count(s); n != len(ids) {
			t.Fatalf("Count(%q) = %d, Encode gave %d ids", s, n, len(ids))
		}
		for _, id := range ids {
			if _, ok := tok.TokenBytes(id); !ok {
				t.Fatalf("Encode(%q) produced unknown id %d", s, id)
			}
		}
		got := tok.Decode(ids)
		want := Sanitize(s)
		if got != want {
			t.Fatalf("Decode(Encode(%q)) = %q, want %q", s, got, want)
		}
		if utf8.ValidString(s) && got != s {
			t.Fatalf("valid input %q did not round-trip", s)
		}
		if !utf8.ValidString(want) {
			t.Fatalf("Sanitize(%q) = %q is not valid UTF-8", s, want)
		}
	})
}
