package llmtest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValidatorsRefuse: each validator refuses the histories its API
// refuses, naming the rule, and accepts a well-formed one.
func TestValidatorsRefuse(t *testing.T) {
	const u = `{"role":"user","content":[{"type":"text","text":"q"}]}`
	anth := func(msgs string) []byte { return []byte(`{"model":"m","max_tokens":100,"messages":[` + msgs + `]}`) }
	gem := func(contents string) []byte { return []byte(`{"contents":[` + contents + `]}`) }
	oai := func(msgs string) []byte { return []byte(`{"model":"m","messages":[` + msgs + `]}`) }
	mark := `,"cache_control":{"type":"ephemeral"}`
	tests := []struct {
		name     string
		validate func([]byte) error
		body     []byte
		want     string // "" accepts
	}{
		{"anthropic ok", ValidateAnthropic, anth(u + `,{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"r","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"},{"type":"text","text":"go"}]}`), ""},
		{"anthropic dangling call", ValidateAnthropic, anth(u + `,{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"r","input":{}}]},` + u), "tool_use ids were found without tool_result blocks"},
		{"anthropic orphan result", ValidateAnthropic, anth(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"x"}]}`), "unexpected tool_use_id"},
		{"anthropic result after text", ValidateAnthropic, anth(u + `,{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"r","input":{}}]},{"role":"user","content":[{"type":"text","text":"go"},{"type":"tool_result","tool_use_id":"t1","content":"x"}]}`), "must come first"},
		{"anthropic blank text", ValidateAnthropic, anth(u + `,{"role":"assistant","content":[{"type":"text","text":" \n"}]},` + u), "non-whitespace text"},
		{"anthropic two users", ValidateAnthropic, anth(u + `,` + u), "alternate"},
		{"anthropic unsigned thinking", ValidateAnthropic, anth(u + `,{"role":"assistant","content":[{"type":"thinking","thinking":"x"}]},` + u), "signature"},
		{"anthropic five cache marks", ValidateAnthropic, []byte(`{"max_tokens":10,"system":[{"type":"text","text":"s"` + mark + `}],"messages":[{"role":"user","content":[{"type":"text","text":"a"` + mark + `},{"type":"text","text":"b"` + mark + `},{"type":"text","text":"c"` + mark + `},{"type":"text","text":"d"` + mark + `}]}]}`), "maximum of 4 blocks with cache_control"},
		{"anthropic thinking budget", ValidateAnthropic, []byte(`{"max_tokens":1000,"thinking":{"type":"enabled","budget_tokens":1000},"messages":[` + u + `]}`), "budget_tokens"},
		{"anthropic temperature with thinking", ValidateAnthropic, []byte(`{"max_tokens":3000,"temperature":0.2,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + u + `]}`), "temperature may only be set to 1"},
		{"anthropic temperature 1 with thinking", ValidateAnthropic, []byte(`{"max_tokens":3000,"temperature":1,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + u + `]}`), ""},
		{"anthropic tool loop without thinking", ValidateAnthropic, []byte(`{"max_tokens":3000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + u + `,{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"t1","name":"r","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]}`), "must start with a thinking block"},
		{"anthropic tool loop with thinking", ValidateAnthropic, []byte(`{"max_tokens":3000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + u + `,{"role":"assistant","content":[{"type":"redacted_thinking","data":"x"},{"type":"tool_use","id":"t1","name":"r","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]}`), ""},
		{"anthropic new turn without thinking", ValidateAnthropic, []byte(`{"max_tokens":3000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + u + `,{"role":"assistant","content":[{"type":"text","text":"x"}]},` + u + `]}`), ""},
		{"gemini thought in the model turn", ValidateGemini, gem(`{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"text":"hmm","thought":true,"thoughtSignature":"s"},{"text":"a"}]},{"role":"user","parts":[{"text":"go"}]}`), ""},
		{"gemini thought not a boolean", ValidateGemini, gem(`{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"text":"hmm","thought":"yes"}]},{"role":"user","parts":[{"text":"go"}]}`), "thought is a boolean"},
		{"gemini thought not text", ValidateGemini, gem(`{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"thought":true,"functionCall":{"name":"r","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"r","response":{}}}]}`), "thought part"},
		{"gemini empty signature", ValidateGemini, gem(`{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"text":"a","thoughtSignature":""}]},{"role":"user","parts":[{"text":"go"}]}`), "thoughtSignature"},
		{"gemini ok", ValidateGemini, gem(`{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"functionCall":{"id":"f","name":"r","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"id":"f","name":"r","response":{}}}]}`), ""},
		{"gemini missing response", ValidateGemini, gem(`{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"functionCall":{"name":"r","args":{}}}]},{"role":"user","parts":[{"text":"go"}]}`), "number of function response parts"},
		{"gemini id not repeated", ValidateGemini, gem(`{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"functionCall":{"id":"f","name":"r","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"r","response":{}}}]}`), "does not match the call"},
		{"gemini empty parts", ValidateGemini, gem(`{"role":"user","parts":[]}`), "must not be empty"},
		{"gemini bad role", ValidateGemini, gem(`{"role":"assistant","parts":[{"text":"q"}]}`), "role must be user or model"},
		{"openai dangling call", ValidateOpenAI, oai(`{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"r","arguments":"{}"}}]},{"role":"user","content":"go"}`), "followed by tool messages"},
		{"openai orphan tool", ValidateOpenAI, oai(`{"role":"user","content":"q"},{"role":"tool","tool_call_id":"c","content":"x"}`), "must be a response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.validate(tt.body)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}
