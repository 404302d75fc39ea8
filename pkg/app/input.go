package app

import (
	"io"
	"os"
	"strings"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/text"
)

// Limits on what tug reads from files and standard input. An app's config
// lives in one Secret, which Kubernetes caps at 1 MiB: reading more only to
// have the API server refuse it wastes memory, or never ends (/dev/zero).
// Each limit is checked while reading, before any request.
const (
	// MaxConfigBytes bounds the config one command sets (names and values)
	// and each file or stream it reads that config from.
	MaxConfigBytes = 1 << 20
	// MaxFileArgBytes bounds any other file named on the command line.
	MaxFileArgBytes = 1 << 20
	// MaxProcfileBytes bounds a Procfile; its commands end up in every
	// Deployment of the app.
	MaxProcfileBytes = 256 << 10
	// MaxProcfileLine bounds one line of a Procfile.
	MaxProcfileLine = 64 << 10
)

// ReadLimited reads all of r, but no more than limit bytes: more is an
// input error that names what was read (a flag and its value, a KEY=@-)
// and the limit.
func ReadLimited(r io.Reader, what string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, inputerr.Errorf("%s: %w", what, err)
	}
	if int64(len(b)) > limit {
		return nil, inputerr.Errorf("%s: larger than the %s limit", what, text.Size(limit))
	}
	return b, nil
}

// ReadFileArg reads a file named on the command line, at most
// MaxFileArgBytes; an error, an input error, says which flag named it.
func ReadFileArg(flag, path string) ([]byte, error) {
	return ReadFileArgLimit(flag, path, MaxFileArgBytes)
}

// ReadFileArgLimit is ReadFileArg with its own limit.
func ReadFileArgLimit(flag, path string, limit int64) ([]byte, error) {
	what := flag + " " + path
	if strings.HasSuffix(flag, "=@") { // KEY=@FILE
		what = flag + path
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, inputerr.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	return ReadLimited(f, what, limit)
}
