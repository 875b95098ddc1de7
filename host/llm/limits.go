package llm

import "strings"

// Limits are a model's published token limits; 0 is unknown.
type Limits struct {
	// Output is the most tokens one reply may have (the largest
	// max_tokens / maxOutputTokens the API accepts).
	Output int64
	// Context is the context window: input and output together.
	Context int64
}

// knownLimits are the limits of the models the docs name, from their
// providers' model references. A model name matches an entry that equals
// it or that it starts with followed by "-" (a dated snapshot such as
// claude-sonnet-4-5-20250929).
var knownLimits = map[string]Limits{
	"claude-sonnet-4-5": {Output: 64000, Context: 200000},
	"claude-haiku-4-5":  {Output: 64000, Context: 200000},
	"claude-opus-4-1":   {Output: 32000, Context: 200000},
	"gemini-2.5-flash":  {Output: 65536, Context: 1048576},
	"gemini-2.5-pro":    {Output: 65536, Context: 1048576},
	"deepseek-chat":     {Output: 8192, Context: 128000},
	"gpt-5":             {Output: 128000, Context: 400000},
	"gpt-4o":            {Output: 16384, Context: 128000},
}

// KnownLimits returns the published limits of model, ok false when the
// model is not one Weir knows.
func KnownLimits(model string) (Limits, bool) {
	if l, ok := knownLimits[model]; ok {
		return l, true
	}
	best := ""
	for name := range knownLimits {
		if strings.HasPrefix(model, name+"-") && len(name) > len(best) {
			best = name
		}
	}
	if best == "" {
		return Limits{}, false
	}
	return knownLimits[best], true
}
