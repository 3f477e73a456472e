package s3store

import "testing"

func TestETagMD5(t *testing.T) {
	tests := []struct {
		name, etag, want string
	}{
		{"quoted, as listed", `"9e107d9d372bb6826bd81d3542a419d6"`, "9e107d9d372bb6826bd81d3542a419d6"},
		{"unquoted, as minio-go trims it", "9e107d9d372bb6826bd81d3542a419d6", "9e107d9d372bb6826bd81d3542a419d6"},
		{"upper case", "9E107D9D372BB6826BD81D3542A419D6", "9e107d9d372bb6826bd81d3542a419d6"},
		{"uploaded in parts", `"9e107d9d372bb6826bd81d3542a419d6-2"`, ""},
		{"not hex", "9e107d9d372bb6826bd81d3542a419zz", ""},
		{"short", "9e107d9d", ""},
		{"none", "", ""},
	}
	for _, tt := range tests {
		if got := etagMD5(tt.etag); got != tt.want {
			t.Errorf("%s: etagMD5(%q): got %q, want %q", tt.name, tt.etag, got, tt.want)
		}
	}
}
