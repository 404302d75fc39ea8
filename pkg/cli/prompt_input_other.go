//go:build !unix

package cli

import "io"

// promptTTY is stdin on systems without /dev/tty.
type promptTTY struct{ _ int }

func openPromptTTY() *promptTTY { return nil }

func (*promptTTY) Read([]byte) (int, error) { return 0, io.EOF }

func (t *promptTTY) forOnePrompt() (io.Reader, func()) { return t, func() {} }
