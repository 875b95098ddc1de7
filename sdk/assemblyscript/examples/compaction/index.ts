// compaction: an example compaction plugin written in AssemblyScript.
//
// Before a step, when the surface holds more than "maxNodes" nodes, and
// always on manual and overflow compaction, it asks the host's model to
// summarize every node after the system prompt except the newest one, and
// proposes one compaction bracket:
//
//   compaction/start   {compactionId, turn}
//   compaction/summary {compactionId, summary, shadowedSeqs}
//   user/message       the checkpoint, replacing those nodes, citing them
//                      and the two events before it
//   compaction/end     {compactionId}
//
// The checkpoint's source is {"kind":"plugin","plugin":<the configured
// name>,"compactionId":...}, as the host requires. The range never ends
// between an assistant message's tool calls and their results (the node
// after it is never a tool result), and the plugin proposes nothing when
// the checkpoint would not be smaller than what it replaces. Its state blob
// counts the compactions it proposed, in decimal.
//
// Configuration (JSON): {"maxNodes": 8}.
import {
  Plugin, register, fail, pluginName, jsonInt, jsonQuote, hostError,
  surfaceNodes, generations, message, summarize, SummarizeRequest,
  CompactionRequest, CompactionResult, Proposal, Intent,
  KIND_COMPACTION, METHOD_COMPACTION_PRESTEP,
} from "../../weir";
export { weir_abi_version, weir_input, weir_call } from "../../weir";

class Compaction extends Plugin {
  maxNodes: i64 = 8;

  kinds(): u32[] {
    return [KIND_COMPACTION];
  }

  configure(config: string): void {
    this.maxNodes = 8;
    if (config.length == 0) return;
    const v = jsonInt(config, "maxNodes");
    if (v.bad || (v.ok && v.value < 1)) {
      fail("compaction config: maxNodes must be an integer of at least 1");
      return;
    }
    if (v.ok) this.maxNodes = v.value;
  }

  compact(method: u32, req: CompactionRequest): CompactionResult | null {
    const nodes = surfaceNodes();
    if (nodes === null) return failed();
    const n = nodes.length;
    if (method == METHOD_COMPACTION_PRESTEP && <i64>n <= this.maxNodes) return null;
    const first = n > 0 && nodes[0].type == "system/message" ? 1 : 0;
    if (n < first + 3) return null; // at most one node to replace besides the newest
    let last = n - 2;
    // Never separate tool calls from their results.
    while (last > first && nodes[last + 1].type == "tool/result") last--;
    if (last <= first || nodes[first].type == "tool/result") return null;
    if (last - first + 1 > 1024) last = first + 1023;

    const gen = generations();
    if (gen === null) return failed();
    const sreq = new SummarizeRequest();
    const seqs: i64[] = [];
    let shadowedBytes = 0;
    for (let i = first; i <= last; i++) {
      const m = message(nodes[i].seq);
      if (m === null) return failed();
      sreq.messages.push(m);
      seqs.push(nodes[i].seq);
      shadowedBytes += String.UTF8.byteLength(m);
    }
    sreq.instruction = "Summarize the conversation so far in a few sentences.";
    sreq.maxTokens = 512;
    const summary = summarize(sreq);
    if (summary === null) return failed();

    const id = jsonQuote("checkpoint-" + gen.logLength.toString());
    const checkpoint = '{"id":' + id + ',"role":"user","source":{"kind":"plugin","plugin":' + jsonQuote(pluginName()) +
      ',"compactionId":' + id + '},"content":[{"type":"text","text":' +
      jsonQuote("Summary of the earlier conversation:\n" + summary) + "}]}";
    if (String.UTF8.byteLength(checkpoint) >= shadowedBytes) return null; // it would not shrink the surface

    const res = new CompactionResult();
    const start = new Proposal();
    start.type = "compaction/start";
    start.data = '{"compactionId":' + id + ',"turn":' + req.turn.toString() + "}";
    res.proposals.push(start);

    const sum = new Proposal();
    sum.type = "compaction/summary";
    const shadowed: string[] = [];
    for (let i = 0; i < seqs.length; i++) shadowed.push(seqs[i].toString());
    sum.data = '{"compactionId":' + id + ',"summary":' + jsonQuote(summary) + ',"shadowedSeqs":[' + shadowed.join(",") + "]}";
    res.proposals.push(sum);

    // The checkpoint cites the start and summary (the next two seqs) and
    // every node it shadows.
    const cp = new Proposal();
    cp.type = "user/message";
    cp.data = checkpoint;
    cp.intent = Intent.Replace;
    cp.startSeq = nodes[first].seq;
    cp.endSeq = nodes[last].seq;
    cp.sources = [gen.logLength, gen.logLength + 1].concat(seqs);
    res.proposals.push(cp);

    const end = new Proposal();
    end.type = "compaction/end";
    end.data = '{"compactionId":' + id + "}";
    res.proposals.push(end);

    res.state = Uint8Array.wrap(String.UTF8.encode((count(req.state) + 1).toString()));
    return res;
  }
}

// failed reports a failed host import as the plugin's error.
function failed(): CompactionResult | null {
  fail(hostError());
  return null;
}

// count parses the state blob, the number of compactions so far.
function count(state: Uint8Array): i64 {
  let v: i64 = 0;
  for (let i = 0; i < state.length; i++) {
    const c = state[i];
    if (c < 0x30 || c > 0x39 || v > 1000000000) return 0;
    v = v * 10 + (c - 0x30);
  }
  return v;
}

register(new Compaction("as-compaction", "0.1.0"));
