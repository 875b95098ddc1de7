// prompt: an example system-prompt plugin written in AssemblyScript.
//
// It renders the host's prompt sections (the non-blank ones, trimmed,
// separated by a blank line, as the built-in renderer does), then the
// configured "footer" line, then "Today's date: <date>." when the host
// passes a date in its host data. A plugin has no clock: the date is data,
// so a replay renders the same prompt.
//
// Configuration (JSON): {"footer": "Answer in English."}; an empty or
// absent footer adds nothing.
import { Plugin, register, fail, jsonString, RenderRequest, KIND_SYSTEM_PROMPT } from "../../weir";
export { weir_abi_version, weir_input, weir_call } from "../../weir";

class Prompt extends Plugin {
  footer: string = "";

  kinds(): u32[] {
    return [KIND_SYSTEM_PROMPT];
  }

  configure(config: string): void {
    this.footer = "";
    if (config.trim().length == 0) return;
    const f = jsonString(config, "footer");
    if (f.bad) {
      fail("prompt config: not a JSON object");
      return;
    }
    this.footer = f.value;
  }

  renderPrompt(req: RenderRequest): string {
    const parts: string[] = [];
    for (let i = 0; i < req.sections.length; i++) {
      const t = req.sections[i].text.trim();
      if (t.length) parts.push(t);
    }
    const footer = this.footer.trim();
    if (footer.length) parts.push(footer);
    const date = req.value("date").trim();
    if (date.length) parts.push("Today's date: " + date + ".");
    return parts.join("\n\n");
  }
}

register(new Prompt("as-prompt", "0.1.0"));
