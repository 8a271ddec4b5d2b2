package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// NameError is a field named twice in one object, or named in another
// case than its own: encoding/json would take the last of two, and take
// "Token" for "token", so {"token":a,"Token":b} would read b where a
// client's validator read a.
type NameError struct{ Name, Problem string }

func (e *NameError) Error() string { return fmt.Sprintf("%s field %q", e.Problem, e.Name) }

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkNames walks b (one JSON value, already decoded once into a value of
// type t) and refuses an object that names a field twice, or that names a
// struct's field in another case than its tag. Objects a type reads itself
// (json.RawMessage, maps, any) are held to the first rule alone: in
// free-form data "a" and "A" are two names.
func checkNames(b []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return walk(dec, t)
}

func walk(dec *json.Decoder, t reflect.Type) error {
	if scalars(t) { // no object can be in it (it decoded into t): skipped in one read, not a token each
		var skip json.RawMessage
		return dec.Decode(&skip)
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType)) {
		t = nil // free-form from here down
	}
	switch d {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walk(dec, elem); err != nil {
				return err
			}
		}
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = map[string]reflect.Type{}
			fieldsOf(t, fields)
		} else if t != nil && t.Kind() == reflect.Map {
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			if seen[k] {
				return &NameError{Name: k, Problem: "duplicate"}
			}
			seen[k] = true
			next := elem
			if fields != nil {
				ft, ok := fields[k]
				if !ok {
					for name := range fields {
						if strings.EqualFold(name, k) {
							return &NameError{Name: k, Problem: "unknown"}
						}
					}
				}
				next = ft
			}
			if err := walk(dec, next); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// scalars says whether t holds scalars alone (numbers, strings, bools, or
// lists of them), so that a value of it has no name to check. A type that
// reads itself (json.RawMessage) is free-form: not scalars.
func scalars(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshalerType) {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	case reflect.Slice, reflect.Array:
		return scalars(t.Elem())
	}
	return false
}

// fieldsOf adds struct type t's JSON names and their types to into, the
// fields of an embedded struct without a tag as its own.
func fieldsOf(t reflect.Type, into map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			fieldsOf(ft, into)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		into[name] = f.Type
	}
}
