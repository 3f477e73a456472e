package queue_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strings"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/queue"
)

func TestDecodeMessage(t *testing.T) {
	accepted := []struct {
		body string
		want queue.Message
	}{
		{`{"task":1,"cursor":0}`, queue.Message{TaskID: 1, Cursor: 0}},
		{`{"cursor":5,"task":2}`, queue.Message{TaskID: 2, Cursor: 5}},
		{" \t\r\n{ \"task\" : 3 ,\n\"cursor\" : 9007199254740993 }\n", queue.Message{TaskID: 3, Cursor: 1<<53 + 1}},
		{`{"task":9223372036854775807,"cursor":9223372036854775807}`, queue.Message{TaskID: math.MaxInt64, Cursor: math.MaxInt64}},
		{`{"task":1,"cursor":-0}`, queue.Message{TaskID: 1, Cursor: 0}},
	}
	for _, tt := range accepted {
		got, err := queue.DecodeMessage([]byte(tt.body))
		if err != nil || got != tt.want {
			t.Errorf("DecodeMessage(%q): got %+v, %v; want %+v", tt.body, got, err, tt.want)
		}
	}

	refused := []struct {
		name, body string
		reason     string // in the error's message
	}{
		{"empty", ``, "not JSON"},
		{"not JSON", `seed demo:world z0-2, please`, "not JSON"},
		{"cut off", `{"task":1,"cursor":2`, "not JSON"},
		{"trailing comma", `{"task":1,"cursor":2,}`, "not JSON"},
		{"missing comma", `{"task":1 "cursor":2}`, "not JSON"},
		{"null", `null`, "not a JSON object"},
		{"array", `[{"task":1,"cursor":2}]`, "not a JSON object"},
		{"number", `1`, "not a JSON object"},
		{"string", `"{\"task\":1,\"cursor\":2}"`, "not a JSON object"},
		{"task missing", `{"cursor":0}`, "task missing"},
		{"cursor missing", `{"task":5}`, "cursor missing"},
		{"empty object", `{}`, "task missing"},
		{"unknown member", `{"task":1,"cursor":2,"x":3}`, `unknown member x`},
		{"unknown member first", `{"lane":1,"task":1,"cursor":2}`, `unknown member lane`},
		{"name in another case", `{"Task":1,"cursor":2}`, `unknown member Task`},
		{"name in upper case", `{"task":1,"CURSOR":2}`, `unknown member CURSOR`},
		{"empty name", `{"":1,"task":1,"cursor":2}`, `unknown member ""`},
		{"task repeated", `{"task":1,"task":2,"cursor":0}`, `"task" repeated`},
		{"cursor repeated", `{"task":1,"cursor":0,"cursor":0}`, `"cursor" repeated`},
		{"string value", `{"task":"1","cursor":2}`, "task is a string"},
		{"null value", `{"task":1,"cursor":null}`, "cursor is null"},
		{"boolean value", `{"task":true,"cursor":2}`, "task is a boolean"},
		{"object value", `{"task":{"id":1},"cursor":2}`, "task is an object"},
		{"array value", `{"task":1,"cursor":[2]}`, "cursor is an array"},
		{"fraction", `{"task":1.5,"cursor":2}`, "task 1.5 is not an integer"},
		{"integral fraction", `{"task":1.0,"cursor":2}`, "task 1.0 is not an integer"},
		{"exponent", `{"task":1,"cursor":1e3}`, "cursor 1e3 is not an integer"},
		{"over int64", `{"task":1,"cursor":9223372036854775808}`, "is not an integer of 64 bits"},
		{"task 0", `{"task":0,"cursor":0}`, "task 0 is not a task id"},
		{"negative task", `{"task":-7,"cursor":0}`, "task -7 is not a task id"},
		{"negative cursor", `{"task":1,"cursor":-1}`, "cursor -1 is negative"},
		{"second value", `{"task":1,"cursor":2} {}`, "data after the object"},
		{"second object", `{"task":1,"cursor":2}{"task":1,"cursor":2}`, "data after the object"},
		{"garbage after", `{"task":1,"cursor":2} x`, "not JSON"},
	}
	for _, tt := range refused {
		got, err := queue.DecodeMessage([]byte(tt.body))
		if !apperr.Is(err, apperr.Invalid) || !strings.Contains(apperr.Message(err), tt.reason) {
			t.Errorf("%s: DecodeMessage(%q): got %+v, %v; want kind %v saying %q", tt.name, tt.body, got, err, apperr.Invalid, tt.reason)
		}
		if got != (queue.Message{}) {
			t.Errorf("%s: DecodeMessage(%q) refused the body but returned %+v, want the zero Message", tt.name, tt.body, got)
		}
	}
}

func TestEncodeMessage(t *testing.T) {
	for _, tt := range []struct {
		m    queue.Message
		want string
	}{
		{queue.Message{TaskID: 1, Cursor: 0}, `{"task":1,"cursor":0}`},
		{queue.Message{TaskID: 2, Cursor: 2}, `{"task":2,"cursor":2}`},
		{queue.Message{TaskID: math.MaxInt64, Cursor: math.MaxInt64}, `{"task":9223372036854775807,"cursor":9223372036854775807}`},
	} {
		body, err := queue.EncodeMessage(tt.m)
		if err != nil || string(body) != tt.want {
			t.Errorf("EncodeMessage(%+v): got %s, %v; want %s", tt.m, body, err, tt.want)
		}
		if back, err := queue.DecodeMessage(body); err != nil || back != tt.m {
			t.Errorf("DecodeMessage(EncodeMessage(%+v)): got %+v, %v", tt.m, back, err)
		}
	}
	for _, m := range []queue.Message{{}, {TaskID: -1}, {TaskID: 1, Cursor: -1}, {TaskID: math.MinInt64, Cursor: math.MinInt64}} {
		if body, err := queue.EncodeMessage(m); !apperr.Is(err, apperr.Invalid) || body != nil {
			t.Errorf("EncodeMessage(%+v): got %q, %v; want no body and kind %v", m, body, err, apperr.Invalid)
		}
	}
}

// lenientStrict is the reader of lane messages the SQS adapter used before
// DecodeMessage, built on encoding/json (unknown fields disallowed, both
// fields required, nothing after the object) plus Validate: the reference
// of FuzzDecodeMessage. DecodeMessage refuses two things more, on purpose:
// member names in another case (encoding/json folds case) and repeated
// members (encoding/json keeps the last).
func lenientStrict(body []byte) (queue.Message, bool) {
	var raw struct {
		TaskID *int64 `json:"task"`
		Cursor *int64 `json:"cursor"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil || raw.TaskID == nil || raw.Cursor == nil {
		return queue.Message{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return queue.Message{}, false
	}
	m := queue.Message{TaskID: *raw.TaskID, Cursor: *raw.Cursor}
	return m, m.Validate() == nil
}

// FuzzDecodeMessage compares DecodeMessage with encoding/json (see
// lenientStrict) and checks that what it accepts survives EncodeMessage.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"task":1,"cursor":0}`,
		`{"cursor":5,"task":2}`,
		`{"task":5}`,
		`{"Task":1,"cursor":2}`,
		`{"task":1,"task":2,"cursor":0}`,
		`{"task":1.0,"cursor":2}`,
		`{"task":1,"cursor":2} {}`,
		`{"task":"1","cursor":null}`,
		`[1]`,
		"\ufeff{\"task\":1,\"cursor\":0}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := queue.DecodeMessage(body)
		ref, refOK := lenientStrict(body)
		if err != nil {
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("DecodeMessage(%q): error %v of kind %v, want %v", body, err, apperr.KindOf(err), apperr.Invalid)
			}
			if msg := apperr.Message(err); refOK && !strings.Contains(msg, "unknown member") && !strings.Contains(msg, "repeated") {
				t.Fatalf("DecodeMessage(%q) refused it (%v), encoding/json reads %+v", body, err, ref)
			}
			return
		}
		if !refOK || m != ref {
			t.Fatalf("DecodeMessage(%q) = %+v, encoding/json reads %+v (accepted: %v)", body, m, ref, refOK)
		}
		enc, err := queue.EncodeMessage(m)
		if err != nil {
			t.Fatalf("EncodeMessage(%+v) of an accepted body: %v", m, err)
		}
		if back, err := queue.DecodeMessage(enc); err != nil || back != m {
			t.Fatalf("DecodeMessage(EncodeMessage(%+v)) = %+v, %v", m, back, err)
		}
	})
}
