package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"tilecache/internal/apperr"
)

// The body of a lane message, wherever one travels as bytes (the body of an
// SQS message, whether a worker process receives it or the SQS event source
// hands it to the worker function), is the JSON object
//
//	{"task":T,"cursor":C}
//
// EncodeMessage writes it and DecodeMessage is its only reader, so the
// process that sends a message and every process that takes one in apply
// the same rules.

// Validate reports whether m can be a lane message: TaskID is a task id
// (ids start at 1) and Cursor a metatile index (not negative). It returns
// an apperr.Invalid error naming the rule m breaks.
func (m Message) Validate() error {
	if m.TaskID < 1 {
		return apperr.Invalidf("lane message: task %d is not a task id (ids start at 1)", m.TaskID)
	}
	if m.Cursor < 0 {
		return apperr.Invalidf("lane message: cursor %d is negative", m.Cursor)
	}
	return nil
}

// EncodeMessage returns m's body, {"task":T,"cursor":C}, or m's Validate
// error: a message DecodeMessage would refuse is never written.
func EncodeMessage(m Message) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 48)
	b = append(b, `{"task":`...)
	b = strconv.AppendInt(b, m.TaskID, 10)
	b = append(b, `,"cursor":`...)
	b = strconv.AppendInt(b, m.Cursor, 10)
	return append(b, '}'), nil
}

// DecodeMessage reads a lane message's body strictly. It accepts exactly:
//
//   - one JSON value, an object, with nothing but JSON whitespace around
//     it (not JSON, null, an array, a number, a second value: refused);
//   - with the members "task" and "cursor", each present once, and no
//     other member; names match byte for byte ("Task" is an unknown
//     member, where encoding/json would fold its case);
//   - whose values are JSON numbers written as integers that fit an int64
//     (a string, null, true, an object, 1.5, 1e3 or 2^63: refused);
//   - that make a valid Message (see Validate: task ≥ 1, cursor ≥ 0).
//
// Every refusal is an apperr.Invalid error saying which rule the body
// breaks. A refused body is poison: no worker can ever process it.
func DecodeMessage(body []byte) (Message, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil {
		return Message{}, notJSON(err)
	} else if tok != json.Delim('{') {
		return Message{}, apperr.Invalidf("lane message: not a JSON object")
	}
	var task, cursor *int64
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Message{}, notJSON(err)
		}
		name, _ := tok.(string) // inside an object a token here is a member name
		var dst **int64
		switch name {
		case "task":
			dst = &task
		case "cursor":
			dst = &cursor
		default:
			return Message{}, apperr.Invalidf("lane message: unknown member %s", apperr.Show(name))
		}
		if *dst != nil {
			return Message{}, apperr.Invalidf("lane message: member %q repeated", name)
		}
		if tok, err = dec.Token(); err != nil {
			return Message{}, notJSON(err)
		}
		n, ok := tok.(json.Number)
		if !ok {
			return Message{}, apperr.Invalidf("lane message: %s is %s, not an integer", name, jsonType(tok))
		}
		v, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return Message{}, apperr.Invalidf("lane message: %s %s is not an integer of 64 bits", name, apperr.Show(string(n)))
		}
		*dst = &v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return Message{}, notJSON(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return Message{}, notJSON(err)
		}
		return Message{}, apperr.Invalidf("lane message: data after the object")
	}
	switch {
	case task == nil:
		return Message{}, apperr.Invalidf("lane message: task missing")
	case cursor == nil:
		return Message{}, apperr.Invalidf("lane message: cursor missing")
	}
	m := Message{TaskID: *task, Cursor: *cursor}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}

func notJSON(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF // an empty or cut-off body
	}
	return apperr.Wrap(apperr.Invalid, err, "lane message: not JSON")
}

// jsonType names the JSON type of a value token that is not a number.
func jsonType(tok json.Token) string {
	switch tok {
	case nil:
		return "null"
	case json.Delim('{'):
		return "an object"
	case json.Delim('['):
		return "an array"
	}
	switch tok.(type) {
	case bool:
		return "a boolean"
	case string:
		return "a string"
	}
	return "not a number"
}
