/*
 * meter: a test token meter written at the wire level. observe appends the
 * number of events it saw to its state (a decimal count), measure reports
 * the state's count as the total and surface tokens.
 */
#include "weir.h"

static int64_t count_of(weir_str state) {
	int64_t v = 0;
	for (size_t i = 0; i < state.len; i++)
		v = v * 10 + (state.data[i] - '0');
	return v;
}

static int meter(int method, weir_str request, weir_buf *result, weir_buf *err) {
	weir_str state = {0};
	int64_t events = 0;
	weir_reader r = weir_reader_of(request.data, request.len);
	weir_field f;
	while (weir_next(&r, &f)) {
		if (f.num == 1)
			state = f.s;
		else if (f.num == 2 && method == WEIR_METHOD_METER_OBSERVE)
			events++;
	}
	if (r.err) {
		weir_buf_puts(err, "the request did not decode");
		return WEIR_STATUS_BAD_REQUEST;
	}
	int64_t n = count_of(state);
	if (method == WEIR_METHOD_METER_OBSERVE) {
		weir_buf s = {0};
		weir_buf_put_int(&s, n + events);
		weir_pb_bytes(result, 1, s.data, s.len); /* ObserveResult.state */
		weir_buf_free(&s);
		return WEIR_STATUS_OK;
	}
	weir_pb_int(result, 4, n, 0); /* Measurement.total_tokens */
	weir_pb_int(result, 5, n, 0); /* Measurement.surface_tokens */
	weir_pb_bytes(result, 9, "count", 5); /* Measurement.tokenizer */
	return WEIR_STATUS_OK;
}

const struct weir_plugin weir_plugin = {
	.name = "meter",
	.version = "0.1.0",
	.meter = meter,
};
