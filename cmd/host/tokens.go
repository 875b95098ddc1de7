package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/weirhost/weir/sdk/tokenizer"
	"github.com/weirhost/weir/sdk/tokenizer/openai"
)

func init() {
	register(&command{name: "tokens", args: "[FILE]", summary: "count the tokens of a text (or print their ids) with a tokenizer", run: tokensCmd})
}

// encoder is a tokenizer that can also give ids.
type encoder interface {
	tokenizer.Counter
	Encode(string) []int
}

// tokenizers are the tokenizers the command line offers, by name.
var tokenizers = map[string]func() (encoder, error){
	"deepseek-v3": func() (encoder, error) { return tokenizer.DeepSeekV3(), nil },
	"o200k":       func() (encoder, error) { return openai.O200kBase, openai.O200kBase.Load() },
	"cl100k":      func() (encoder, error) { return openai.Cl100kBase, openai.Cl100kBase.Load() },
}

func tokensCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("tokens", flag.ContinueOnError)
	name := fs.String("tokenizer", "deepseek-v3", "deepseek-v3, o200k, cl100k or heuristic")
	ids := fs.Bool("ids", false, "print the token ids as one JSON array instead of the count")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("usage: %[1]s tokens [--tokenizer NAME] [--ids] [FILE]", prog)
	}
	var text []byte
	if len(pos) == 1 {
		text, err = os.ReadFile(pos[0])
	} else {
		text, err = io.ReadAll(e.stdin)
	}
	if err != nil {
		return err
	}
	if *name == "heuristic" {
		if *ids {
			return usagef("the heuristic counter has no token ids")
		}
		fmt.Fprintln(e.stdout, tokenizer.Heuristic.Count(string(text)))
		return nil
	}
	open, ok := tokenizers[*name]
	if !ok {
		return usagef("unknown tokenizer %q: use deepseek-v3, o200k, cl100k or heuristic", *name)
	}
	tok, err := open()
	if err != nil {
		return err
	}
	if !*ids {
		fmt.Fprintln(e.stdout, tok.Count(string(text)))
		return nil
	}
	out := []byte{'['}
	for i, id := range tok.Encode(string(text)) {
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendInt(out, int64(id), 10)
	}
	out = append(out, ']', '\n')
	_, err = e.stdout.Write(out)
	return err
}
