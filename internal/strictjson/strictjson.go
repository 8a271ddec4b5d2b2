// Package strictjson reads JSON the way every body and setting the hub
// takes must be read: exactly one value, no field its type does not have
// (DESIGN: a typo must never widen, or quietly drop, what a request does).
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
)

// ErrTrailing is Decode's answer to text holding more than one JSON value.
var ErrTrailing = errors.New("more than one JSON value")

// Decode reads exactly one JSON value from b into v, refusing fields v
// does not have, a field named twice in one object and a field named in
// another case than its own (a *NameError).
func Decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return ErrTrailing
	}
	return checkNames(b, reflect.TypeOf(v))
}

// Problem says what Decode found wrong, in words a client may be shown: the
// field of the wrong type, the unknown field, or that the body is not one
// JSON object.
func Problem(err error) string {
	var te *json.UnmarshalTypeError
	var ne *NameError
	switch {
	case errors.As(err, &ne):
		return ne.Error()
	case errors.As(err, &te):
		return FieldName(te.Field) + " has the wrong type"
	case errors.Is(err, ErrTrailing):
		return "body must hold one JSON object"
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown field " + name
	}
	return "body is not a valid JSON object"
}

// FieldName is how a decoding error's field is named: "body" for the whole.
func FieldName(f string) string {
	if f == "" {
		return "body"
	}
	return f
}
