package cli

import (
	"flag"
	"strings"

	"github.com/weirhost/weir/host"
)

func init() {
	register(&command{name: "request", args: "FILE --at SEQ", summary: "print the exact wire request body the loop sent at a seq", run: requestCmd})
	register(&command{name: "transcript", args: "FILE", summary: "print the human transcript (append-origin messages, no system prompt)", run: transcriptCmd})
}

func requestCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("request", flag.ContinueOnError)
	at := fs.Int64("at", -1, "seq of the request's request/header, request/context or settlement (assistant/message, assistant/attempt), or of a plugin/call (a compaction's summarization request)")
	configFile := fs.String("config", "", "the configuration whose sessions.store holds SESSION when it is a session id (default ./weir.yaml, then weir/weir.yaml in the user config folder)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *at < 0 {
		return usagef("usage: %[1]s request FILE --at SEQ", prog)
	}
	s, err := loadLog(pos[0], *configFile)
	if err != nil {
		return err
	}
	req, err := host.RequestAt(s.log.Events(), *at, s.id)
	if err != nil {
		return err
	}
	body, err := req.Body()
	if err != nil {
		return err
	}
	if len(body) == 0 || body[len(body)-1] != '\n' {
		body = append(body, '\n')
	}
	_, err = e.stdout.Write(body)
	return err
}

// transcriptJSON is the documented shape of "host transcript --json".
type transcriptJSON struct {
	Session string      `json:"session"`
	Entries []entryJSON `json:"entries"`
}

type entryJSON struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	Role string `json:"role"`
	Text string `json:"text"`
}

func transcriptCmd(e *env, args []string) error {
	fs := flag.NewFlagSet("transcript", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	configFile := fs.String("config", "", "the configuration whose sessions.store holds SESSION when it is a session id (default ./weir.yaml, then weir/weir.yaml in the user config folder)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: %[1]s transcript [--json] FILE", prog)
	}
	s, err := loadLog(pos[0], *configFile)
	if err != nil {
		return err
	}
	out := transcriptJSON{Session: s.id, Entries: []entryJSON{}}
	for _, en := range s.log.Transcript() {
		out.Entries = append(out.Entries, entryJSON{Seq: en.Seq, Type: en.Type, Role: en.Message.Role, Text: previewOf(en.Message, 1<<20)})
	}
	if *asJSON {
		return writeJSON(e.stdout, out)
	}
	for _, en := range out.Entries {
		who := en.Role
		if en.Type == "tool/result" {
			who = "tool"
		}
		line := termSafe(strings.TrimSpace(en.Text))
		if line == "" {
			continue
		}
		if _, err := e.stdout.Write([]byte(termLine(who) + ": " + line + "\n")); err != nil {
			return err
		}
	}
	return nil
}
