package main

import (
	"errors"
	"io"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/text"
)

// errorObject is what -o json|yaml prints on stdout when a command is
// refused before it made anything to print (docs/output.md, "Errors"), so a
// script reading stdout gets a document, not nothing.
type errorObject struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	// Class is what kind of refusal: "locked" (another tug changes the app).
	Class    string `json:"class"`
	Message  string `json:"message"`
	ExitCode int    `json:"exitCode"`
	App      string `json:"app,omitempty"`
	// Holder, Since and Expires: who holds the lock, since when, and when
	// it is free if that tug was killed.
	Holder  string     `json:"holder,omitempty"`
	Since   *time.Time `json:"since,omitempty"`
	Expires *time.Time `json:"expires,omitempty"`
}

// writeErrorObject prints err's error object on out when the command was
// asked for -o json or yaml and err is one that has an object.
func writeErrorObject(out io.Writer, cmd *cobra.Command, err error) {
	if cmd == nil || err == nil {
		return
	}
	flag := cmd.Flags().Lookup("output")
	if flag == nil {
		return
	}
	format := cli.OutputFormat(flag.Value.String())
	if format != cli.OutputJSON && format != cli.OutputYAML {
		return
	}
	var held *lock.HeldError
	if !errors.As(err, &held) {
		return
	}
	since, expires := held.Since.UTC(), held.Expires.UTC()
	obj := errorObject{Error: errorDetail{Class: "locked", Message: cli.Sanitize(text.OneLine(err.Error())), ExitCode: held.ExitCode(),
		App: held.App, Holder: held.Holder, Since: &since, Expires: &expires}}
	ios := &cli.IOStreams{Out: out}
	if format == cli.OutputYAML {
		_ = cli.WriteYAML(ios, obj)
		return
	}
	_ = cli.WriteJSON(ios, obj)
}
