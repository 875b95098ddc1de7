// meter: a test token meter written at the wire level. observe adds the
// number of events it saw to its state (a decimal count), measure reports
// the state's count as the total and surface tokens.
import { Plugin, register, fail, Buf, Reader, KIND_TOKEN_METER, METHOD_METER_OBSERVE } from "../../weir";
export { weir_abi_version, weir_input, weir_call } from "../../weir";

class Meter extends Plugin {
  kinds(): u32[] {
    return [KIND_TOKEN_METER];
  }

  meter(method: u32, request: Reader, result: Buf): void {
    let state = "";
    let events: i64 = 0;
    while (request.next()) {
      if (request.num == 1) state = request.string();
      else if (request.num == 2 && method == METHOD_METER_OBSERVE) events++;
    }
    if (request.err) {
      fail("the request did not decode");
      return;
    }
    const n: i64 = state.length ? I64.parseInt(state) : 0;
    if (method == METHOD_METER_OBSERVE) {
      result.str(1, (n + events).toString()); // ObserveResult.state
      return;
    }
    result.uint(4, <u64>n); // Measurement.total_tokens
    result.uint(5, <u64>n); // Measurement.surface_tokens
    result.str(9, "count"); // Measurement.tokenizer
  }
}

register(new Meter("meter", "0.1.0"));
