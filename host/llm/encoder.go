package llm

import (
	"errors"
	"fmt"

	"github.com/weirhost/weir/surface"
)

// EncoderVersion is the version of the request encoders of this build.
// The stream record of every attempt names the version its body was
// encoded by (its "enc" member), and a request rebuilt from a log carries
// that version (Request.Encoder), so the body rebuilt for an old attempt
// is the body then sent, not the body this build would send.
//
// Version 1 is the encoding of the attempts whose record has no "enc"
// member. Version 2 changed what a history of the same blocks sends:
//
//   - every API: a tool call without a result, and a result that answers
//     no call, are left out (see paired); version 1 sent them;
//   - Anthropic: blank text (only whitespace) is left out; version 1 left
//     out only empty text;
//   - Anthropic and Gemini: the config's reasoningEffort turns thinking on
//     (thinking, thinkingConfig), and Anthropic then sends no temperature
//     other than 1, and no thinking on a request that continues a tool
//     loop whose assistant message starts without it; version 1 sent no
//     thinking setting;
//   - Gemini: assistant reasoning goes back as thought parts; version 1
//     left it out, and refused a functionResponse whose call was not
//     sent (it needs the call's name).
//
// The blocks version 2 sends that version 1 never saw (Anthropic
// redacted_thinking and other blocks kept whole, signed empty thinking,
// gemini-part blocks, Gemini thoughtSignatures on text and functionCall
// ids, the signedBy of a signature) are made only by the decoders of
// version 2, so a log of version 1 holds none of them and they need no
// version of their own.
const EncoderVersion = 2

// encoderV1 is the first encoder version: a stream record with no "enc"
// member was written by it.
const encoderV1 = 1

// encoder returns the encoder version that encodes r: r.Encoder, 0 being
// EncoderVersion. A version this build does not have is an error.
func (r *Request) encoder() (int, error) {
	switch v := r.Encoder; {
	case v == 0:
		return EncoderVersion, nil
	case v < encoderV1 || v > EncoderVersion:
		return 0, fmt.Errorf("llm: encode: encoder version %d is not one this build has (%d to %d): the log was written by another build", v, encoderV1, EncoderVersion)
	default:
		return v, nil
	}
}

// encodable checks what every encoder needs of a request (one, naming a
// model, of an encoder version this build has) and returns the version
// that encodes it.
func encodable(req *Request) (int, error) {
	if req == nil {
		return 0, errors.New("llm: encode: nil request")
	}
	if req.Config.Model == "" {
		return 0, errors.New("llm: encode: the request names no model (config.model is empty)")
	}
	return req.encoder()
}

// history returns the messages an encoder of version v writes: those of
// r with the pairing rule applied from version 2 on.
func (r *Request) history(v int) []*surface.Message {
	if v == encoderV1 {
		return r.Messages
	}
	return paired(r.Messages)
}
