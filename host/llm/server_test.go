package llm

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
)

func TestClientServer(t *testing.T) {
	for _, c := range []struct {
		base string
		addr string
		port int
	}{
		{"https://api.anthropic.com", "api.anthropic.com", 443},
		{"http://127.0.0.1:8080/v1", "127.0.0.1", 8080},
		{"http://[::1]/v1", "::1", 80},
	} {
		cl, err := NewClient(ClientConfig{BaseURL: c.base})
		require.NoError(t, err)
		addr, port := cl.Server()
		require.Equal(t, c.addr, addr, c.base)
		require.Equal(t, c.port, port, c.base)
	}
}

// A record with no chunk naming the response (a refused request, a
// chunk that is not JSON) gives no id and no model.
func TestResponseOfWithoutChunks(t *testing.T) {
	for _, rec := range []string{
		`{"v":1,"status":429,"headers":{"Retry-After":"2"},"body":"slow down","error":{"t":3,"code":"RATE_LIMIT","message":"m"}}`,
		`{"v":1,"chunks":[[1,"not json"]],"error":{"t":2,"code":"BROKEN_STREAM","message":"m"}}`,
		`not a record`,
	} {
		id, model := ResponseOf(jsontext.Value(rec))
		require.Empty(t, id, rec)
		require.Empty(t, model, rec)
	}
	id, model := ResponseOf(jsontext.Value(`{"v":1,"api":"gemini","chunks":[[1,{"candidates":[]}],[2,{"responseId":"r-9","modelVersion":"gemini-x"}]],"done":3}`))
	require.Equal(t, "r-9", id)
	require.Equal(t, "gemini-x", model)
}
