// A system-prompt plugin: the host's prompt sections joined by a blank
// line, then the configured "footer" (plugins.<name>.config.footer).
import { Plugin, register, fail, jsonString, RenderRequest, KIND_SYSTEM_PROMPT } from "weir-sdk-assemblyscript/weir";
export { weir_abi_version, weir_input, weir_call } from "weir-sdk-assemblyscript/weir";

class Prompt extends Plugin {
  footer: string = "";

  kinds(): u32[] {
    return [KIND_SYSTEM_PROMPT];
  }

  renderOnChange(): bool {
    return true; // the prompt depends on the request and configuration only
  }

  configure(config: string): void {
    if (config.length == 0) return;
    const f = jsonString(config, "footer");
    if (f.bad) fail("config: not a JSON object");
    else if (f.ok) this.footer = f.value;
  }

  renderPrompt(req: RenderRequest): string {
    let out = "";
    for (let i = 0; i < req.sections.length; i++) {
      const text = req.sections[i].text.trim();
      if (text.length == 0) continue;
      if (out.length) out += "\n\n";
      out += text;
    }
    if (this.footer.length) out += (out.length ? "\n\n" : "") + this.footer;
    return out;
  }
}

register(new Prompt("my-prompt", "0.1.0"));
