package app

import "slices"

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
}

// Equal says whether s and o are the same settings.
func (s BuildSettings) Equal(o BuildSettings) bool {
	return s.Builder == o.Builder && s.Repository == o.Repository && s.RunImage == o.RunImage && s.Timeout == o.Timeout &&
		slices.Equal(s.Buildpacks, o.Buildpacks) && slices.Equal(s.BuildEnv, o.BuildEnv)
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
