package cli

import (
	"strings"
	"testing"

	"tug.dev/tug/pkg/cli/clitest"
)

func sampleTable() *Table {
	t := NewTable("name", "status", "restarts", "reason")
	t.AddRow("web-7d9f8-abcde", "started", "0")
	t.AddRow("worker-5c6b7-xyz12", "crashed", "12", "CrashLoopBackOff: exit code 1")
	t.AddRow("a", "stopped\twith\ttabs", "0", "multi\nline")
	return t
}

func TestTableOnTerminal(t *testing.T) {
	ios, _, out, _ := TestIOStreams()
	ios.SetStdoutTTY(true)
	if err := sampleTable().Render(ios, false); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "table-tty", out.Bytes())
	for i, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("line %d has trailing spaces: %q", i, line)
		}
	}
}

func TestTableOnTerminalNoHeaders(t *testing.T) {
	ios, _, out, _ := TestIOStreams()
	ios.SetStdoutTTY(true)
	if err := sampleTable().Render(ios, true); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "table-tty-no-headers", out.Bytes())
}

func TestTablePiped(t *testing.T) {
	ios, _, out, _ := TestIOStreams()
	if err := sampleTable().Render(ios, false); err != nil {
		t.Fatal(err)
	}
	clitest.Golden(t, "table-piped", out.Bytes())
}

func TestTablePipedNoHeaders(t *testing.T) {
	ios, _, out, _ := TestIOStreams()
	if err := sampleTable().Render(ios, true); err != nil {
		t.Fatal(err)
	}
	want := "web-7d9f8-abcde\tstarted\t0\t\nworker-5c6b7-xyz12\tcrashed\t12\tCrashLoopBackOff: exit code 1\na\tstopped with tabs\t0\tmulti line\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

func TestEmptyTable(t *testing.T) {
	ios, _, out, _ := TestIOStreams()
	ios.SetStdoutTTY(true)
	tbl := NewTable("name", "age")
	if err := tbl.Render(ios, false); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "NAME   AGE\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	out.Reset()
	if err := tbl.Render(ios, true); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("no headers and no rows should print nothing, got %q", out.String())
	}
}

func TestTableColoredCellsStayAligned(t *testing.T) {
	ios, _, out, _ := TestIOStreams()
	ios.SetStdoutTTY(true)
	c := ios.Colors()
	tbl := NewTable("name", "status", "age")
	tbl.AddRow("a", c.Green("ok"), "1d")
	tbl.AddRow("bbbbbb", c.Red("failed"), "2d")
	if err := tbl.Render(ios, false); err != nil {
		t.Fatal(err)
	}
	plain := stripANSI(out.String())
	want := "NAME     STATUS   AGE\na        ok       1d\nbbbbbb   failed   2d\n"
	if plain != want {
		t.Errorf("without colour codes got\n%s\nwant\n%s", plain, want)
	}
	if !strings.Contains(out.String(), "\x1b[32mok") {
		t.Errorf("colour lost: %q", out.String())
	}
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestShortDigests(t *testing.T) {
	d := strings.Repeat("ab", 32)
	for in, want := range map[string]string{
		"reg/shop@sha256:" + d:          "reg/shop@sha256:abababababab",
		"sha256:" + d + ", sha256:" + d: "sha256:abababababab, sha256:abababababab",
		"reg/shop:1":                    "reg/shop:1",
		"sha256:" + d[:60]:              "sha256:" + d[:60], // not a whole digest
		"sha256:" + d + "ff":            "sha256:" + d + "ff",
	} {
		if got := ShortDigests(in); got != want {
			t.Errorf("ShortDigests(%q) = %q, want %q", in, got, want)
		}
	}
}
