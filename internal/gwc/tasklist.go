package gwc

import "strconv"

// TaskListJSON encodes task status rows (contract §5.1):
// {"long-array-array":[[1,2,3,4,5]]}, or {"long-array-array":[]} when there
// are none. Rows are written in the order given.
func TaskListJSON(rows [][5]int64) []byte {
	b := make([]byte, 0, 24+len(rows)*40)
	b = append(b, `{"long-array-array":[`...)
	for i, row := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for j, v := range row {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, v, 10)
		}
		b = append(b, ']')
	}
	return append(b, "]}"...)
}

// TaskListXML encodes task status rows as XML without declaration or
// whitespace (contract §5.1):
// <long-array-array><long-array><long>1</long>…</long-array></long-array-array>,
// or <long-array-array/> when there are none.
func TaskListXML(rows [][5]int64) []byte {
	if len(rows) == 0 {
		return []byte("<long-array-array/>")
	}
	b := make([]byte, 0, 40+len(rows)*110)
	b = append(b, "<long-array-array>"...)
	for _, row := range rows {
		b = append(b, "<long-array>"...)
		for _, v := range row {
			b = append(b, "<long>"...)
			b = strconv.AppendInt(b, v, 10)
			b = append(b, "</long>"...)
		}
		b = append(b, "</long-array>"...)
	}
	return append(b, "</long-array-array>"...)
}
