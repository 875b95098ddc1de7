// Package guestconf decodes the configurations of the test guests.
package guestconf

import "encoding/json"

// Decode decodes a configuration into v; an empty one leaves v as it is.
func Decode(raw []byte, v any) error {
	if len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// Attack is a hostile guest's configuration: the misbehaviour it shows,
// "" (none) when the configuration is empty.
func Attack(raw []byte) (string, error) {
	var c struct {
		Attack string `json:"attack"`
	}
	err := Decode(raw, &c)
	return c.Attack, err
}
