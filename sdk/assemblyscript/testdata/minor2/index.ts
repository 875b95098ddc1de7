// minor2: a prompt and compaction provider that uses every minor-2 part
// of the ABI the SDK wraps: renderOnChange, an ignorable event type and
// the optional compaction.region method in describe, the event import,
// and idleBelowTokens in a prestep result.
import {
  Plugin, register, fail, event, hostError, jsonQuote, RenderRequest, CompactionRequest, CompactionResult, Proposal,
  KIND_SYSTEM_PROMPT, KIND_COMPACTION, METHOD_COMPACTION_PRESTEP, METHOD_COMPACTION_REGION,
} from "../../weir";
export { weir_abi_version, weir_input, weir_call } from "../../weir";

class Minor2 extends Plugin {
  kinds(): u32[] {
    return [KIND_SYSTEM_PROMPT, KIND_COMPACTION];
  }

  events(): string[] {
    return ["minor2/region"];
  }

  renderOnChange(): bool {
    return true;
  }

  compactionRegion(): bool {
    return true;
  }

  renderPrompt(req: RenderRequest): string {
    let s = "";
    for (let i = 0; i < req.sections.length; i++) s += req.sections[i].text;
    return s;
  }

  compact(method: u32, req: CompactionRequest): CompactionResult | null {
    const res = new CompactionResult();
    if (method == METHOD_COMPACTION_PRESTEP) {
      res.idleBelowTokens = 1000;
      return res;
    }
    if (method != METHOD_COMPACTION_REGION) return null;
    // Report the region and the data of its first event, as the host
    // stored it, in the declared ignorable event.
    const ev = event(req.regionStartSeq);
    if (ev === null) {
      fail("event: " + hostError());
      return null;
    }
    const p = new Proposal();
    p.type = "minor2/region";
    p.ignorable = true;
    p.data = '{"start":' + req.regionStartSeq.toString() + ',"end":' + req.regionEndSeq.toString() +
      ',"type":' + jsonQuote(ev.type) + ',"data":' + ev.data + "}";
    res.proposals.push(p);
    return res;
  }
}

register(new Minor2("as-minor2", "0.1.0"));
