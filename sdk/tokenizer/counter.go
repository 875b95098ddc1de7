package tokenizer

// Counter counts the tokens of a text under one tokenizer or estimator.
// Implementations must be safe for concurrent use.
type Counter interface {
	// Name identifies the tokenizer, e.g. "deepseek-v3" or "heuristic".
	Name() string
	// Count returns the number of tokens of text.
	Count(text string) int
}

var (
	_ Counter = (*Tokenizer)(nil)
	_ Counter = Heuristic
)
