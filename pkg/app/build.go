package app

import (
	"slices"
	"strings"

	"tug.dev/tug/pkg/imagebuild/protocol"
)

// BuildSettings are how an app is built from source (tug app deploy
// without --image): remembered from the last deploy that set them.
type BuildSettings struct {
	Builder    string `json:"builder,omitempty"`
	Repository string `json:"repository,omitempty"`
	RunImage   string `json:"runImage,omitempty"` // "" for the builder image
	Timeout    string `json:"timeout,omitempty"`  // a Go duration, "" for the default
	// Buildpacks (ID[@VERSION]) and BuildEnv (K=V) of a Cloud Native
	// Buildpacks builder's builds: --buildpack and --build-env.
	Buildpacks []string `json:"buildpacks,omitempty"`
	BuildEnv   []string `json:"buildEnv,omitempty"`
	// Inspected is what a build read of a builder pinned by digest (so it
	// cannot change): later builds with it skip reading it again.
	Inspected *InspectedBuilder `json:"inspected,omitempty"`
}

// BuiltWith is what built a release's image from source with a Cloud
// Native Buildpacks builder: the builder as the deploy named it and the
// buildpacks (ID@VERSION) the image's io.buildpacks.build.metadata label
// lists. It travels with the image (a config change or a rollback keeps
// it); a release whose image came any other way has none.
type BuiltWith struct {
	Builder    string   `json:"builder"`
	Buildpacks []string `json:"buildpacks"`
}

// Clone is a deep copy.
func (b *BuiltWith) Clone() *BuiltWith {
	if b == nil {
		return nil
	}
	return &BuiltWith{Builder: b.Builder, Buildpacks: slices.Clone(b.Buildpacks)}
}

// InspectedBuilder is what tug read of a builder image's config.
type InspectedBuilder struct {
	Image string `json:"image"` // NAME@sha256:...
	protocol.Builder
}

func (b *InspectedBuilder) equal(o *InspectedBuilder) bool {
	if b == nil || o == nil {
		return b == o
	}
	x, y := b.Builder, o.Builder
	return b.Image == o.Image && x.CNB == y.CNB && x.UID == y.UID && x.GID == y.GID && x.RunImage == y.RunImage &&
		x.Lifecycle == y.Lifecycle && x.Error == y.Error && slices.Equal(x.PlatformAPIs, y.PlatformAPIs) && slices.Equal(x.Buildpacks, y.Buildpacks)
}

// Clone is a deep copy.
func (b *InspectedBuilder) Clone() *InspectedBuilder {
	if b == nil {
		return nil
	}
	c := *b
	c.PlatformAPIs, c.Buildpacks = slices.Clone(b.PlatformAPIs), slices.Clone(b.Buildpacks)
	return &c
}

// Equal says whether s and o are the same settings.
func (s BuildSettings) Equal(o BuildSettings) bool {
	return s.Builder == o.Builder && s.Repository == o.Repository && s.RunImage == o.RunImage && s.Timeout == o.Timeout &&
		slices.Equal(s.Buildpacks, o.Buildpacks) && slices.Equal(s.BuildEnv, o.BuildEnv) && s.Inspected.equal(o.Inspected)
}

// Merge fills what s leaves empty from the remembered settings.
func (s BuildSettings) Merge(remembered *BuildSettings) BuildSettings {
	if remembered == nil {
		return s
	}
	if s.Builder == "" {
		s.Builder = remembered.Builder
	}
	if s.Repository == "" {
		s.Repository = remembered.Repository
	}
	if s.RunImage == "" {
		s.RunImage = remembered.RunImage
	}
	if s.Timeout == "" {
		s.Timeout = remembered.Timeout
	}
	if len(s.Buildpacks) == 0 {
		s.Buildpacks = slices.Clone(remembered.Buildpacks)
	}
	if len(s.BuildEnv) == 0 {
		s.BuildEnv = slices.Clone(remembered.BuildEnv)
	}
	return s
}

// Shown is s as app info shows it: the build env's names, never its values
// (a build env is not for secrets, but a value can still be one someone
// typed). nil for nil.
func (s *BuildSettings) Shown() *BuildSettings {
	if s == nil {
		return nil
	}
	c := *s
	c.BuildEnv = make([]string, 0, len(s.BuildEnv))
	for _, kv := range s.BuildEnv {
		k, _, _ := strings.Cut(kv, "=")
		c.BuildEnv = append(c.BuildEnv, k)
	}
	if len(c.BuildEnv) == 0 {
		c.BuildEnv = nil
	}
	return &c
}
