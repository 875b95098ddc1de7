// Command gen derives the embedded DeepSeek V3 tokenizer data of package
// tokenizer from the Hugging Face tokenizer.json and the character classes of
// the reference JavaScript engine.
//
// Usage (from sdk/tokenizer, as the go:generate line in generate.go does):
//
//	go run ./internal/gen -src ../../../shared/data/deepseek-v3-tokenizer
//
// With -check it writes nothing and fails when the committed outputs differ
// from a fresh generation (CI runs it). Otherwise it writes
// data/deepseek_v3.bin.gz (vocabulary bytes, merges, added tokens)
// and tables.go (pre-tokenizer character classes from
// testdata/oracle/classes.txt). Both outputs are deterministic.
//
// The tool refuses a tokenizer.json whose normalizer, pre-tokenizer, model or
// added-token options differ from what the Go encoder implements, so a new
// upstream file cannot silently produce wrong token ids.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Character classes; keep in sync with the constants in ../../unicode.go.
const (
	clsOther = iota
	clsLetter
	clsMark
	clsNumber
	clsPunct
	clsSymbol
	clsSpace
)

// Block size of the two-stage class table; keep in sync with ../../unicode.go.
const blockBits = 7

// dataMagic starts the embedded data; keep in sync with ../../load.go.
const dataMagic = "WEIRBPE1"

// Regexes of the pre-tokenizer the Go scanner implements, as they read
// after JSON decoding.
const (
	digitsRegex = `\p{N}{1,3}`
	cjkRegex    = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
	mainRegex   = `[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_` + "`" + `{|}~][A-Za-z]+` +
		"|[^\r\n" + `\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+` +
		`| ?[\p{P}\p{S}]+[` + "\r\n]*" +
		`|\s*[` + "\r\n]+" +
		`|\s+(?!\S)|\s+`
)

// wantPreTokenizer is the pre-tokenizer the Go scanner implements.
func wantPreTokenizer() (json.RawMessage, error) {
	split := func(re string) map[string]any {
		return map[string]any{"type": "Split", "pattern": map[string]any{"Regex": re}, "behavior": "Isolated", "invert": false}
	}
	return json.Marshal(map[string]any{
		"type": "Sequence",
		"pretokenizers": []any{
			split(digitsRegex), split(cjkRegex), split(mainRegex),
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		},
	})
}

type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Special    bool   `json:"special"`
}

type tokenizerFile struct {
	AddedTokens  []addedToken    `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        struct {
		Type                    string         `json:"type"`
		Vocab                   map[string]int `json:"vocab"`
		Merges                  []string       `json:"merges"`
		ByteFallback            bool           `json:"byte_fallback"`
		IgnoreMerges            bool           `json:"ignore_merges"`
		ContinuingSubwordPrefix *string        `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string        `json:"end_of_word_suffix"`
	} `json:"model"`
}

func main() {
	src := flag.String("src", "", "folder holding tokenizer.json (the shared DeepSeek V3 data)")
	classes := flag.String("classes", "testdata/oracle/classes.txt", "character class ranges written by testdata/oracle/gen.mjs")
	out := flag.String("out", ".", "package folder to write data/deepseek_v3.bin.gz and tables.go into")
	check := flag.Bool("check", false, "write nothing; fail when the outputs in -out differ from a fresh generation")
	flag.Parse()
	if *src == "" {
		fail(errors.New("-src is required: the folder holding tokenizer.json"))
	}
	var err error
	if *check {
		err = checkOutputs(*src, *classes, *out)
	} else {
		err = run(*src, *classes, *out)
	}
	if err != nil {
		fail(err)
	}
}

// outputs are the files gen writes, relative to the package folder.
var outputs = []string{"data/deepseek_v3.bin.gz", "tables.go"}

// checkOutputs generates into a temporary folder and compares the result
// with the committed outputs in out.
func checkOutputs(src, classes, out string) error {
	tmp, err := os.MkdirTemp("", "weir-tokenizer-gen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := run(src, classes, tmp); err != nil {
		return err
	}
	for _, name := range outputs {
		want, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(tmp, name))
		if err != nil {
			return err
		}
		if !bytes.Equal(want, got) {
			return fmt.Errorf("%s differs from a fresh generation from %s: run go generate in sdk/tokenizer", name, src)
		}
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}

func run(src, classes, out string) error {
	raw, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err != nil {
		return err
	}
	var tf tokenizerFile
	if err := json.Unmarshal(raw, &tf); err != nil {
		return fmt.Errorf("parse %s: %w", filepath.Join(src, "tokenizer.json"), err)
	}
	if err := checkPipeline(&tf); err != nil {
		return err
	}
	data, stats, err := encodeData(&tf)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, "data"), 0o755); err != nil {
		return err
	}
	var zbuf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&zbuf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "data", "deepseek_v3.bin.gz"), zbuf.Bytes(), 0o644); err != nil {
		return err
	}
	table, err := classTables(classes)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "tables.go"), table, 0o644); err != nil {
		return err
	}
	fmt.Printf("gen: %s; data %d bytes (%d gzip)\n", stats, len(data), zbuf.Len())
	return nil
}

func compact(raw json.RawMessage) (string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSpace(out.String()), nil
}

// checkPipeline rejects any configuration the Go encoder does not implement.
func checkPipeline(tf *tokenizerFile) error {
	norm, err := compact(tf.Normalizer)
	if err != nil {
		return fmt.Errorf("normalizer: %w", err)
	}
	if norm != `{"normalizers":[],"type":"Sequence"}` && norm != "null" {
		return fmt.Errorf("unsupported normalizer %s: the Go encoder implements none", norm)
	}
	pre, err := compact(tf.PreTokenizer)
	if err != nil {
		return fmt.Errorf("pre_tokenizer: %w", err)
	}
	wantRaw, err := wantPreTokenizer()
	if err != nil {
		return fmt.Errorf("built-in pre-tokenizer description: %w", err)
	}
	want, err := compact(wantRaw)
	if err != nil {
		return fmt.Errorf("built-in pre-tokenizer description: %w", err)
	}
	if pre != want {
		return fmt.Errorf("unsupported pre_tokenizer:\n got %s\nwant %s", pre, want)
	}
	m := &tf.Model
	if m.Type != "BPE" || m.ByteFallback || m.IgnoreMerges || m.ContinuingSubwordPrefix != nil || m.EndOfWordSuffix != nil {
		return fmt.Errorf("unsupported model options: type %q byte_fallback %v ignore_merges %v", m.Type, m.ByteFallback, m.IgnoreMerges)
	}
	for _, t := range tf.AddedTokens {
		if t.LStrip || t.RStrip || t.SingleWord {
			return fmt.Errorf("added token %d %q uses lstrip/rstrip/single_word, which the Go encoder does not implement", t.ID, t.Content)
		}
		if t.Content == "" {
			return fmt.Errorf("added token %d is empty", t.ID)
		}
	}
	return nil
}

// byteDecoder maps the GPT-2 byte-level alphabet back to bytes.
func byteDecoder() map[rune]byte {
	m := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[rune(b)] = byte(b)
		} else {
			m[rune(256+n)] = byte(b)
			n++
		}
	}
	return m
}

func decodeByteLevel(dec map[rune]byte, s string) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		b, ok := dec[r]
		if !ok {
			return nil, false
		}
		out = append(out, b)
	}
	return out, true
}

func encodeData(tf *tokenizerFile) ([]byte, string, error) {
	vocabSize := len(tf.Model.Vocab)
	byID := make([]string, vocabSize)
	seen := make([]bool, vocabSize)
	for s, id := range tf.Model.Vocab {
		if id < 0 || id >= vocabSize || seen[id] {
			return nil, "", fmt.Errorf("vocab ids are not a permutation of 0..%d: id %d (%q)", vocabSize-1, id, s)
		}
		seen[id] = true
		byID[id] = s
	}
	added := map[int]addedToken{}
	for _, t := range tf.AddedTokens {
		if _, dup := added[t.ID]; dup {
			return nil, "", fmt.Errorf("added token id %d appears twice", t.ID)
		}
		if t.ID >= 1<<17 {
			return nil, "", fmt.Errorf("added token id %d does not fit the 17-bit id space", t.ID)
		}
		if t.ID < vocabSize && byID[t.ID] != t.Content {
			return nil, "", fmt.Errorf("added token %d %q differs from vocab entry %q", t.ID, t.Content, byID[t.ID])
		}
		if b, ok := decodeByteLevel(byteDecoder(), t.Content); ok && t.ID < vocabSize && string(b) != t.Content {
			return nil, "", fmt.Errorf("added token %d %q is also a byte-level vocab entry with other bytes", t.ID, t.Content)
		}
		added[t.ID] = t
	}
	if vocabSize >= 1<<17 {
		return nil, "", fmt.Errorf("vocab of %d entries does not fit the 17-bit id space", vocabSize)
	}

	// Every merge result is a distinct vocab entry whose id is base+rank, so
	// only the base entries (single bytes and the leading specials) are
	// stored; the loader rebuilds the rest by concatenating merge operands.
	type merge = pair
	merges := make([]merge, len(tf.Model.Merges))
	base := vocabSize - len(merges)
	seenPair := map[merge]int{}
	for rank, m := range tf.Model.Merges {
		if strings.Count(m, " ") != 1 {
			return nil, "", fmt.Errorf("merge %d %q does not hold exactly one space", rank, m)
		}
		ls, rs, _ := strings.Cut(m, " ")
		l, okL := tf.Model.Vocab[ls]
		r, okR := tf.Model.Vocab[rs]
		res, okRes := tf.Model.Vocab[ls+rs]
		if !okL || !okR || !okRes {
			return nil, "", fmt.Errorf("merge %d %q names a token missing from the vocab", rank, m)
		}
		if res != base+rank {
			return nil, "", fmt.Errorf("merge %d %q yields id %d, want %d (base+rank): the data layout assumes ids follow merge order", rank, m, res, base+rank)
		}
		if l >= res || r >= res {
			return nil, "", fmt.Errorf("merge %d %q uses a token defined by a later merge", rank, m)
		}
		if prev, dup := seenPair[merge{l, r}]; dup {
			return nil, "", fmt.Errorf("merges %d and %d are the same pair %q", prev, rank, m)
		}
		seenPair[merge{l, r}] = rank
		merges[rank] = merge{l, r}
	}

	dec := byteDecoder()
	var buf bytes.Buffer
	buf.WriteString(dataMagic)
	putUvarint(&buf, uint64(base))
	singles := 0
	for id, s := range byID[:base] {
		b, ok := decodeByteLevel(dec, s)
		if !ok {
			if _, isAdded := added[id]; !isAdded {
				return nil, "", fmt.Errorf("vocab entry %d %q is neither byte-level nor an added token", id, s)
			}
			putUvarint(&buf, 0)
			continue
		}
		if len(b) != 1 {
			return nil, "", fmt.Errorf("base vocab entry %d %q is not a single byte", id, s)
		}
		singles++
		putUvarint(&buf, 1)
		buf.Write(b)
	}
	if singles != 256 {
		return nil, "", fmt.Errorf("vocab holds %d single-byte tokens, want 256", singles)
	}
	for id, s := range byID[base:] {
		if _, ok := decodeByteLevel(dec, s); !ok {
			return nil, "", fmt.Errorf("vocab entry %d %q is not byte-level", base+id, s)
		}
	}

	// Operands as three byte planes each (low, middle, high byte of the
	// 17-bit id): this compresses far better than varints.
	putUvarint(&buf, uint64(len(merges)))
	for _, get := range []func(merge) int{func(m merge) int { return m.l }, func(m merge) int { return m.r }} {
		for shift := 0; shift < 24; shift += 8 {
			for _, m := range merges {
				buf.WriteByte(byte(get(m) >> shift))
			}
		}
	}

	// Bitmap of the merge results that BPE rebuilds whole from their own
	// bytes: a pre-token equal to such a token encodes as that one id, so
	// the encoder can skip the merge loop for it.
	direct := make([]byte, (len(merges)+7)/8)
	tokBytes := make([][]byte, vocabSize)
	for id := range base {
		if b, ok := decodeByteLevel(dec, byID[id]); ok {
			tokBytes[id] = b
		}
	}
	ranks := make(map[merge]int, len(merges))
	for rank, m := range merges {
		tokBytes[base+rank] = append(append([]byte{}, tokBytes[m.l]...), tokBytes[m.r]...)
		ranks[m] = rank
	}
	var byteID [256]int
	for id := range base {
		if b := tokBytes[id]; len(b) == 1 {
			byteID[b[0]] = id
		}
	}
	nDirect := 0
	for rank := range merges {
		ids := referenceBPE(tokBytes[base+rank], byteID, ranks, base)
		if len(ids) == 1 && ids[0] == base+rank {
			direct[rank/8] |= 1 << (rank % 8)
			nDirect++
		}
	}
	buf.Write(direct)

	putUvarint(&buf, uint64(len(tf.AddedTokens)))
	for _, t := range tf.AddedTokens {
		putUvarint(&buf, uint64(t.ID))
		putUvarint(&buf, uint64(len(t.Content)))
		buf.WriteString(t.Content)
		if t.Special {
			buf.WriteByte(1)
		} else {
			buf.WriteByte(0)
		}
	}
	stats := fmt.Sprintf("%d vocab (%d base), %d merges (%d rebuilt whole by BPE), %d added tokens", vocabSize, base, len(merges), nDirect, len(tf.AddedTokens))
	return buf.Bytes(), stats, nil
}

// pair is a merge: the ids of its left and right operands.
type pair struct{ l, r int }

// referenceBPE encodes b by repeatedly merging the lowest-ranked adjacent
// pair, leftmost first; merge rank r yields id base+r.
func referenceBPE(b []byte, byteID [256]int, ranks map[pair]int, base int) []int {
	ids := make([]int, len(b))
	for i, c := range b {
		ids[i] = byteID[c]
	}
	for {
		best, at := -1, -1
		for i := 0; i+1 < len(ids); i++ {
			r, ok := ranks[pair{ids[i], ids[i+1]}]
			if ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			return ids
		}
		ids[at] = base + best
		ids = append(ids[:at+1], ids[at+2:]...)
	}
}

func putUvarint(buf *bytes.Buffer, v uint64) {
	var tmp [binary.MaxVarintLen64]byte
	buf.Write(tmp[:binary.PutUvarint(tmp[:], v)])
}

func classTables(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	codes := map[string]byte{"O": clsOther, "L": clsLetter, "M": clsMark, "N": clsNumber, "P": clsPunct, "S": clsSymbol, "W": clsSpace}
	type rng struct {
		start rune
		cls   byte
	}
	var ranges []rng
	header := ""
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.HasPrefix(text, "#") {
			if header == "" {
				header = strings.TrimSpace(strings.TrimPrefix(text, "#"))
			}
			continue
		}
		hex, name, ok := strings.Cut(text, " ")
		start, perr := strconv.ParseUint(hex, 16, 32)
		cls, known := codes[name]
		if !ok || perr != nil || !known || start > utf8.MaxRune || (len(ranges) > 0 && rune(start) <= ranges[len(ranges)-1].start) {
			return nil, fmt.Errorf("%s:%d: malformed class range %q", path, line, text)
		}
		ranges = append(ranges, rng{rune(start), cls})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ranges) == 0 || ranges[0].start != 0 {
		return nil, fmt.Errorf("%s: ranges must start at code point 0", path)
	}
	all := make([]byte, utf8.MaxRune+1)
	for i, r := range ranges {
		end := rune(utf8.MaxRune + 1)
		if i+1 < len(ranges) {
			end = ranges[i+1].start
		}
		for c := r.start; c < end; c++ {
			all[c] = r.cls
		}
	}
	const block = 1 << blockBits
	index := map[string]int{}
	var stage1, stage2 []byte
	for b := 0; b < len(all); b += block {
		key := string(all[b : b+block])
		n, ok := index[key]
		if !ok {
			n = len(index)
			if n > 255 {
				return nil, errors.New("more than 256 distinct class blocks: widen stage 1")
			}
			index[key] = n
			stage2 = append(stage2, key...)
		}
		stage1 = append(stage1, byte(n))
	}
	var src bytes.Buffer
	fmt.Fprintf(&src, "// Code generated by internal/gen from testdata/oracle/classes.txt; DO NOT EDIT.\n\n")
	fmt.Fprintf(&src, "package tokenizer\n\n")
	fmt.Fprintf(&src, "// Character classes of the reference regex engine (%s).\n", header)
	fmt.Fprintf(&src, "// classStage1[r>>%d] names a block of classStage2, indexed by r&%d.\n\n", blockBits, block-1)
	fmt.Fprintf(&src, "const classStage1 = %s\n\n", quoteBytes(stage1))
	fmt.Fprintf(&src, "const classStage2 = %s\n", quoteBytes(stage2))
	return format.Source(src.Bytes())
}

// quoteBytes renders b as a Go string literal split over lines.
func quoteBytes(b []byte) string {
	var sb strings.Builder
	const per = 32
	for i := 0; i < len(b); i += per {
		if i > 0 {
			sb.WriteString(" +\n\t")
		}
		sb.WriteByte('"')
		for _, c := range b[i:min(i+per, len(b))] {
			fmt.Fprintf(&sb, "\\x%02x", c)
		}
		sb.WriteByte('"')
	}
	return sb.String()
}
