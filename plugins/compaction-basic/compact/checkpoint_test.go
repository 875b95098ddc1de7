package compact

import (
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/weirhost/weir/surface"
)

// reflectCheckpoint is IsCheckpoint as it read the source before jsonobj:
// the oracle of TestIsCheckpointMatchesReflective.
func reflectCheckpoint(m *surface.Message) bool {
	if m == nil || m.Source.Kind != "plugin" || m.Source.Plugin == "" {
		return false
	}
	var src struct {
		ID string `json:"compactionId"`
	}
	return json.Unmarshal(m.Source.Unknown, &src) == nil && src.ID != ""
}

func TestIsCheckpointMatchesReflective(t *testing.T) {
	for _, unknown := range []string{
		``, `{}`, `null`, `{"compactionId":"cmp-1"}`, `{"compactionId":""}`, `{"compactionId":null}`,
		`{"compactionId":1}`, `{"compactionId":"a","compactionId":"b"}`, `{"CompactionId":"a"}`,
		`{"x":[1,{"y":2}],"compactionId":"cmp-\u0031"}`, `{"compactionId":"a"} {}`, `[]`, `{"compactionId":"a"`,
	} {
		for _, src := range []surface.Source{
			{Kind: "plugin", Plugin: "compaction-basic"}, {Kind: "plugin"}, {Kind: "user", Plugin: "x"},
		} {
			src.Unknown = jsontext.Value(unknown)
			m := &surface.Message{Role: surface.RoleUser, Source: src}
			if got, want := IsCheckpoint(m), reflectCheckpoint(m); got != want {
				t.Errorf("source %+v with %s: IsCheckpoint %v, reflective %v", src, unknown, got, want)
			}
		}
	}
	if IsCheckpoint(nil) {
		t.Error("a nil message is a checkpoint")
	}
}
