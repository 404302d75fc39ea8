package cli

import "testing"

func TestSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, tabs\tand\nnewlines", "plain text, tabs\tand\nnewlines"},
		{"héllo ✓", "héllo ✓"},
		{"\x1b[2J\x1b]0;pwned\x07rest", "^[[2J^[]0;pwned^Grest"},
		{"carriage\rreturn", "carriage^Mreturn"},
		{"del\x7f", "del^?"},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bad \xff byte", `bad \ufffd byte`},
	}
	for _, tt := range tests {
		if got := Sanitize(tt.in); got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTableCellsAreSanitized(t *testing.T) {
	ios, _, out, _ := TestIOStreams()
	tbl := NewTable("message")
	tbl.AddRow("\x1b]0;title\x07ok")
	if err := tbl.Render(ios, true); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "^[]0;title^Gok\n" {
		t.Fatalf("table = %q", got)
	}
}
