// Package mcp offers the tools of Model Context Protocol servers to Weir's
// agents, with the bounds every tool has.
//
// # Model
//
// A [Server] is one configured MCP server: a command the host starts and
// speaks to over its stdin and stdout (stdio), or a URL it reaches over
// streamable HTTP, or a session an embedder connected itself ([Attach]).
// Nothing is started when a Server is made: the first [Server.Tools] (or a
// call) connects, initializes and lists the server's tools. A [Set] holds
// the servers of one configuration and hands out their tools together.
//
// Each server tool becomes a host.Tool named SERVER__TOOL (two
// underscores): model APIs accept tool names matching ^[a-zA-Z0-9_-]{1,64}$
// only, so a dot cannot separate them. A character of the tool's own name
// outside that set becomes "_"; a tool whose full name would be longer
// than 64 characters, or collide with one already offered, is not offered
// (the host log says so). The tool's description and input schema are
// passed through as the server gave them.
//
// # The tool list
//
// The tools offered are part of every request/header event, so a server
// whose list changes (notifications/tools/list_changed) changes the header:
// the Set lists that server's tools again and calls the functions given to
// [Set.OnChange], which hand the new list to their agents (host.Agent
// SetTools); the list takes effect from the first step that starts after
// it was read, and the header change is logged then, so every request
// stays rebuildable from the log.
//
// # Bounds
//
//   - A call is bounded by the agent's tool timeout (tools.timeout,
//     tools.timeouts.NAME) and by the server's own timeout
//     (mcp.servers.NAME.timeout); cancelling the turn cancels the call
//     (the server is sent notifications/cancelled).
//   - A result's text is capped at the server's maxResultKiB: the model
//     sees the first part and a line saying how much was cut. One JSON-RPC
//     message longer than four times the cap (a server flooding its
//     output) breaks the connection: the call fails and the server is
//     restarted.
//   - A server that crashes, closes the connection, times out or sends
//     what does not decode fails the call with an error result the model
//     sees; the connection is closed (a stdio server's process is ended)
//     and the next call starts it again. After Config.Failures consecutive
//     such failures (mcp.servers.NAME.failures) the breaker opens: the server
//     is disabled for the rest of the process and its tools are no longer
//     offered.
//   - A stdio server's stderr goes to the host log (one line per entry,
//     named by the server), never to the terminal. Its environment is a
//     few variables of the host's (PATH, HOME, ...; see [BaseEnv]) and the
//     configured env, not the host's whole environment.
//
// # Secrets
//
// A header value or env value may refer to environment variables as
// ${NAME}; they are expanded when the server is connected, from the
// Getenv given, and the expanded value is never written to the session
// log, a log line or an error. The configuration keeps only the
// reference.
package mcp
