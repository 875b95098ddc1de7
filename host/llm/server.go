package llm

import (
	"net/url"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Server is the host and port the client sends its requests to, from its
// base URL (the port is the scheme's default when the URL names none), as
// telemetry reports them (server.address, server.port).
func (c *Client) Server() (address string, port int) {
	u, err := url.Parse(c.base)
	if err != nil {
		return "", 0
	}
	port, _ = strconv.Atoi(u.Port())
	if port == 0 {
		port = map[string]int{"http": 80, "https": 443}[u.Scheme]
	}
	return u.Hostname(), port
}

// ResponseOf reads the response id and the model that answered from an
// attempt's stream record: an OpenAI-compatible chunk's "id" and "model",
// Anthropic's message_start "message.id" and "message.model", Gemini's
// "responseId" and "modelVersion". Either is "" when the stream did not
// carry it (a refused request, a server that omits it).
func ResponseOf(stream jsontext.Value) (id, model string) {
	var rec struct {
		API    string             `json:"api"`
		Chunks [][]jsontext.Value `json:"chunks"`
	}
	if json.Unmarshal(stream, &rec) != nil {
		return "", ""
	}
	for _, c := range rec.Chunks {
		if len(c) < 2 || c[1].Kind() != '{' {
			continue
		}
		var ch struct {
			ID           string `json:"id"`
			Model        string `json:"model"`
			ResponseID   string `json:"responseId"`
			ModelVersion string `json:"modelVersion"`
			Message      struct {
				ID    string `json:"id"`
				Model string `json:"model"`
			} `json:"message"`
		}
		if json.Unmarshal(c[1], &ch, json.RejectUnknownMembers(false)) != nil {
			continue
		}
		i, m := ch.ID, ch.Model
		switch API(rec.API) {
		case APIAnthropic:
			i, m = ch.Message.ID, ch.Message.Model
		case APIGemini:
			i, m = ch.ResponseID, ch.ModelVersion
		}
		if id == "" {
			id = i
		}
		if model == "" {
			model = m
		}
		if id != "" && model != "" {
			break
		}
	}
	return id, model
}
