// Package protocol is what tug and its build agent (cmd/tug-build) agree
// on: the job header that comes first on the agent's stdin, the limits of
// the source archive that follows it, and the rule for the archive's
// symlinks. Both ends import it, so it uses the standard library only (the
// agent's image stays one small static binary).
package protocol

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
)

// Version is the protocol this package speaks. Agents keep accepting the
// command lines of older clients (no job header); a job with a newer
// version than the agent's is refused.
const Version = 2

// Limits of a source archive (docs/builders.md). The client refuses a
// source over them before it makes any request; the agent stops unpacking
// at them, so a small gzip of zeros cannot fill the node.
const (
	// MaxUnpackedBytes caps the bytes of the regular files in a source.
	MaxUnpackedBytes = 512 << 20
	// MaxEntries caps the files, folders and links in a source.
	MaxEntries = 200_000
)

// JobPrefix starts the job header: one line of JSON before the archive.
const JobPrefix = "TUG-BUILD-JOB "

// maxJobLine bounds the header line an agent reads.
const maxJobLine = 1 << 20

// Job is what the agent needs that must not sit in the pod spec, where
// anyone who can read pods reads it (build arguments may carry tokens).
type Job struct {
	Version   int      `json:"version"`
	BuildArgs []string `json:"buildArgs,omitempty"` // K=V
	Target    string   `json:"target,omitempty"`
	// BuildEnv (K=V) reaches a CNB build's buildpacks as platform env
	// files; Buildpacks (ID[@VERSION]) replace the builder's order.
	BuildEnv   []string `json:"buildEnv,omitempty"`
	Buildpacks []string `json:"buildpacks,omitempty"`
}

// Builder is the agent's answer about a builder image (tug-build
// inspect): whether it is a Cloud Native Buildpacks builder (its config
// has the io.buildpacks.builder.metadata label), and what a platform
// needs of one.
type Builder struct {
	CNB          bool     `json:"cnb"`
	UID          int      `json:"uid,omitempty"` // CNB_USER_ID
	GID          int      `json:"gid,omitempty"` // CNB_GROUP_ID
	RunImage     string   `json:"runImage,omitempty"`
	PlatformAPIs []string `json:"platformAPIs,omitempty"` // the lifecycle's
	Lifecycle    string   `json:"lifecycle,omitempty"`    // its version
	Buildpacks   []string `json:"buildpacks,omitempty"`   // ID@VERSION
	Error        string   `json:"error,omitempty"`        // why the builder could not be read
}

// WriteJob writes the header line.
func WriteJob(w io.Writer, j Job) error {
	j.Version = Version
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", JobPrefix, b)
	return err
}

// EncodeJob is the header line as bytes, to send before the archive.
func EncodeJob(j Job) []byte {
	var b strings.Builder
	_ = WriteJob(&b, j)
	return []byte(b.String())
}

// ReadJob reads the header line from r, leaving r at the archive.
func ReadJob(r *bufio.Reader) (Job, error) {
	var line []byte
	for {
		part, isPrefix, err := r.ReadLine()
		if err != nil {
			return Job{}, fmt.Errorf("reading the job header: %w", err)
		}
		line = append(line, part...)
		if len(line) > maxJobLine {
			return Job{}, errors.New("the job header is over 1 MiB")
		}
		if !isPrefix {
			break
		}
	}
	rest, ok := strings.CutPrefix(string(line), JobPrefix)
	if !ok {
		return Job{}, errors.New("no job header on stdin (a client older than this agent?)")
	}
	var j Job
	if err := json.Unmarshal([]byte(rest), &j); err != nil {
		return Job{}, fmt.Errorf("the job header: %w", err)
	}
	if j.Version < 1 || j.Version > Version {
		return Job{}, fmt.Errorf("the job header speaks protocol %d; this agent speaks 1 to %d: use the agent image of the same tug release", j.Version, Version)
	}
	return j, nil
}

// Tree is a folder whose symlinks can be read without following them
// (*os.Root is one on Unix); Readlink answers with slashes.
type Tree interface {
	Lstat(name string) (fs.FileInfo, error)
	Readlink(name string) (string, error)
}

// maxLinks is how many symlinks one resolution follows (Linux's limit).
const maxLinks = 40

// ErrLinkLoop is a resolution that followed more than 40 symlinks.
var ErrLinkLoop = errors.New("too many levels of symbolic links")

// Escapes says whether name (slash-separated, relative to the tree's top)
// leaves the tree once its symlinks are followed in the tree itself, the
// way the kernel would follow them: `y -> .` then `x -> y/../secret`
// leaves, though x's target reads as inside. Absolute targets always
// leave. A part that does not exist (yet) is taken as a plain folder, so
// what could be made there later counts too.
func Escapes(t Tree, name string) (bool, error) {
	var done []string // the resolved path so far, no links in it
	todo := strings.Split(name, "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return true, nil
			}
			done = done[:len(done)-1]
			continue
		}
		p := path.Join(append(done, c)...)
		fi, err := t.Lstat(p)
		if err != nil {
			// missing, or under a file: nothing to follow here
			done = append(done, c)
			continue
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		if links++; links > maxLinks {
			return false, ErrLinkLoop
		}
		target, err := t.Readlink(p)
		if err != nil {
			return false, err
		}
		if path.IsAbs(target) {
			return true, nil
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return false, nil
}
