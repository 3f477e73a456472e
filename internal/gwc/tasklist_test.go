package gwc

import "testing"

func TestTaskList(t *testing.T) {
	tests := []struct {
		name     string
		rows     [][5]int64
		wantJSON string
		wantXML  string
	}{
		{
			name:     "none (nil)",
			rows:     nil,
			wantJSON: `{"long-array-array":[]}`,
			wantXML:  `<long-array-array/>`,
		},
		{
			name:     "none (empty)",
			rows:     [][5]int64{},
			wantJSON: `{"long-array-array":[]}`,
			wantXML:  `<long-array-array/>`,
		},
		{
			name:     "contract §5.1 XML example",
			rows:     [][5]int64{{120, 4096, 3976, 7, 1}},
			wantJSON: `{"long-array-array":[[120,4096,3976,7,1]]}`,
			wantXML:  `<long-array-array><long-array><long>120</long><long>4096</long><long>3976</long><long>7</long><long>1</long></long-array></long-array-array>`,
		},
		{
			name:     "contract §5.1 JSON example",
			rows:     [][5]int64{{1024, 11184810, 11183786, 41, 1}, {0, 11184810, 11184810, 42, 1}, {0, 11184810, 11184810, 43, 0}},
			wantJSON: `{"long-array-array":[[1024,11184810,11183786,41,1],[0,11184810,11184810,42,1],[0,11184810,11184810,43,0]]}`,
			wantXML: `<long-array-array>` +
				`<long-array><long>1024</long><long>11184810</long><long>11183786</long><long>41</long><long>1</long></long-array>` +
				`<long-array><long>0</long><long>11184810</long><long>11184810</long><long>42</long><long>1</long></long-array>` +
				`<long-array><long>0</long><long>11184810</long><long>11184810</long><long>43</long><long>0</long></long-array>` +
				`</long-array-array>`,
		},
		{
			name:     "contract §4.5 response example",
			rows:     [][5]int64{{0, 5592405, 5592405, 41, 1}, {0, 5592405, 5592405, 42, 0}},
			wantJSON: `{"long-array-array":[[0,5592405,5592405,41,1],[0,5592405,5592405,42,0]]}`,
		},
		{
			name:     "contract §4.5 curl example",
			rows:     [][5]int64{{0, 704, 704, 7, 1}, {0, 704, 704, 8, 1}},
			wantJSON: `{"long-array-array":[[0,704,704,7,1],[0,704,704,8,1]]}`,
		},
		{
			name:     "aborted and large values",
			rows:     [][5]int64{{0, 9223372036854775807, 9223372036854775807, 9, -1}},
			wantJSON: `{"long-array-array":[[0,9223372036854775807,9223372036854775807,9,-1]]}`,
			wantXML:  `<long-array-array><long-array><long>0</long><long>9223372036854775807</long><long>9223372036854775807</long><long>9</long><long>-1</long></long-array></long-array-array>`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(TaskListJSON(tt.rows)); got != tt.wantJSON {
				t.Errorf("JSON: got %s, want %s", got, tt.wantJSON)
			}
			if tt.wantXML == "" {
				return
			}
			if got := string(TaskListXML(tt.rows)); got != tt.wantXML {
				t.Errorf("XML: got %s, want %s", got, tt.wantXML)
			}
		})
	}
}

func BenchmarkTaskListJSON(b *testing.B) {
	rows := make([][5]int64, 128)
	for i := range rows {
		rows[i] = [5]int64{int64(i) * 1000, 11184810, 11184810 - int64(i)*1000, int64(i + 1), 1}
	}
	b.ReportAllocs()
	for b.Loop() {
		TaskListJSON(rows)
	}
}
