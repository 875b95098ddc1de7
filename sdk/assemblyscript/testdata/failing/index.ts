// failing: a test plugin whose prompt.render fails as the host data
// "mode" asks: "error" returns a plugin error, "trap" indexes past the end
// of the sections (an abort: the message goes to stderr, then a trap);
// anything else renders "fine".
import { Plugin, register, fail, RenderRequest, KIND_SYSTEM_PROMPT } from "../../weir";
export { weir_abi_version, weir_input, weir_call } from "../../weir";

class Failing extends Plugin {
  kinds(): u32[] {
    return [KIND_SYSTEM_PROMPT];
  }

  renderPrompt(req: RenderRequest): string {
    const mode = req.value("mode");
    if (mode == "error") {
      fail("asked to fail");
      return "";
    }
    if (mode == "trap") return req.sections[req.sections.length + 5].text;
    return "fine";
  }
}

register(new Failing("failing", "0.1.0"));
