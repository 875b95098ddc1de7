package host

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
	"github.com/weirhost/weir/surface"
)

// weatherArgs are the arguments of the test's typed tool.
type weatherArgs struct {
	City  string   `json:"city" jsonschema:"the city to look up"`
	Days  int      `json:"days,omitempty" jsonschema:"how many days ahead, 0 for today"`
	Units []string `json:"units,omitempty"`
}

type weatherReport struct {
	City string `json:"city"`
	Days int    `json:"days"`
	Sky  string `json:"sky"`
}

func weatherTool(t *testing.T) *TypedTool[weatherArgs, weatherReport] {
	t.Helper()
	tool, err := NewTool("weather", "The weather of a city.", func(ctx context.Context, in weatherArgs) (weatherReport, error) {
		if in.City == "Atlantis" {
			return weatherReport{}, errors.New("no such city")
		}
		return weatherReport{City: in.City, Days: in.Days, Sky: "clear"}, nil
	})
	require.NoError(t, err)
	return tool
}

func TestTypedToolSchema(t *testing.T) {
	tool := weatherTool(t)
	require.Equal(t, "weather", tool.Name())
	// Field order is the struct's, descriptions come from the jsonschema
	// tags, omitempty fields are optional, and other fields are refused.
	require.JSONEq(t, `{
		"name": "weather",
		"description": "The weather of a city.",
		"parameters": {
			"type": "object",
			"properties": {
				"city": {"type": "string", "description": "the city to look up"},
				"days": {"type": "integer", "description": "how many days ahead, 0 for today"},
				"units": {"type": ["null", "array"], "items": {"type": "string"}}
			},
			"required": ["city"],
			"additionalProperties": false
		}
	}`, string(tool.Schema()))
	require.True(t, strings.Index(string(tool.Schema()), `"city"`) < strings.Index(string(tool.Schema()), `"days"`),
		"properties keep the struct's order: %s", tool.Schema())
	again := weatherTool(t)
	require.Equal(t, string(tool.Schema()), string(again.Schema()), "the schema is the same bytes every time")
}

func TestTypedToolRun(t *testing.T) {
	tool := weatherTool(t)
	cases := []struct {
		name, args string
		want       string // the result's text when the call succeeds
		err        string // a substring of the error otherwise
		badArgs    bool   // the error is ErrToolArguments
	}{
		{name: "all fields", args: `{"city":"Oslo","days":2,"units":["C"]}`, want: `{"city":"Oslo","days":2,"sky":"clear"}`},
		{name: "optional fields left out", args: `{"city":"Oslo"}`, want: `{"city":"Oslo","days":0,"sky":"clear"}`},
		{name: "large integer kept exact", args: `{"city":"Oslo","days":9007199254740993}`, want: `{"city":"Oslo","days":9007199254740993,"sky":"clear"}`},
		{name: "missing required field", args: `{"days":2}`, err: "city", badArgs: true},
		{name: "empty arguments are an empty object", args: ``, err: "city", badArgs: true},
		{name: "wrong type", args: `{"city":7}`, err: "city", badArgs: true},
		{name: "fraction for an integer", args: `{"city":"Oslo","days":1.5}`, err: "days", badArgs: true},
		{name: "unknown field", args: `{"city":"Oslo","when":"now"}`, err: "when", badArgs: true},
		{name: "not JSON", args: `{"city":`, err: "not JSON", badArgs: true},
		{name: "two values", args: `{"city":"Oslo"} {}`, err: "more than one JSON value", badArgs: true},
		{name: "not an object", args: `["Oslo"]`, badArgs: true},
		{name: "the function's error", args: `{"city":"Atlantis"}`, err: "no such city"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := tool.Run(context.Background(), tc.args)
			if tc.err == "" && !tc.badArgs {
				require.NoError(t, err)
				require.Equal(t, tc.want, surface.TextOf(blocks))
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.err)
			require.Equal(t, tc.badArgs, errors.Is(err, ErrToolArguments), "%v", err)
		})
	}
}

func TestTypedToolStringResultIsText(t *testing.T) {
	tool, err := NewTool("greet", "", func(ctx context.Context, in map[string]string) (string, error) {
		return "hello " + in["name"] + " (" + ToolCallID(ctx) + ")", nil
	})
	require.NoError(t, err)
	var schema struct {
		Parameters jsontext.Value `json:"parameters"`
	}
	require.NoError(t, json.Unmarshal(tool.Schema(), &schema))
	require.JSONEq(t, `{"type":"object","additionalProperties":{"type":"string"}}`, string(schema.Parameters))
	blocks, err := tool.Run(context.Background(), `{"name":"Ada"}`)
	require.NoError(t, err)
	require.Equal(t, "hello Ada ()", surface.TextOf(blocks))
}

func TestNewToolRefusesNonObjectArguments(t *testing.T) {
	_, err := NewTool("n", "", func(context.Context, int) (string, error) { return "", nil })
	require.ErrorContains(t, err, "not a struct or a map with string keys")
	_, err = NewTool("c", "", func(context.Context, struct{ C chan int }) (string, error) { return "", nil })
	require.ErrorContains(t, err, `tool "c"`)
	_, err = NewTool[struct{}, string]("", "", func(context.Context, struct{}) (string, error) { return "", nil })
	require.ErrorContains(t, err, "empty name")
	require.Panics(t, func() { MustTool("n", "", func(context.Context, int) (string, error) { return "", nil }) })
}

// Through the loop: the derived schema is on the wire, a call with bad
// arguments gets an error result the model sees, and a good call runs with
// its call id.
func TestTypedToolInTheLoop(t *testing.T) {
	var gotID string
	tool, err := NewTool("weather", "The weather of a city.", func(ctx context.Context, in weatherArgs) (string, error) {
		gotID = ToolCallID(ctx)
		return "clear over " + in.City, nil
	})
	require.NoError(t, err)
	h := newHarness(t, "sys", func(c *Config) { c.Tools = []Tool{tool} })
	h.model.then(callTool("c1", "weather", `{"town":"Oslo"}`), callTool("c2", "weather", `{"city":"Oslo"}`), reply("done"))
	res := h.turn("weather in Oslo?")
	require.Equal(t, surface.EndCompleted, res.Reason.Kind)
	require.Equal(t, "c2", gotID)

	require.Len(t, h.model.bodies, 3)
	require.Contains(t, string(h.model.bodies[0]), `"required":["city"]`, "the derived schema is sent")
	rs := toolResults(t, h.s.Log().Events())
	require.Len(t, rs, 2)
	require.True(t, rs[0].Message.Content[0].IsError, "bad arguments are an error result")
	require.Contains(t, surface.TextOf(rs[0].Message.Content[0].Content), "town")
	require.False(t, rs[1].Message.Content[0].IsError)
	require.Equal(t, "clear over Oslo", surface.TextOf(rs[1].Message.Content[0].Content))
	h.checkReconstruction()
}
