package textclip

import "testing"

func TestBytes(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"one two three", 8, "one two…"},
		{"one two three", 4, "one…"}, // the space before the cut goes
		{"héllo", 2, "h…"},           // é is two bytes: not split
		{"éé", 1, "…"},
		{"", 0, ""},
	}
	for _, tt := range tests {
		if got := Bytes(tt.in, tt.max); got != tt.want {
			t.Errorf("Bytes(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}
