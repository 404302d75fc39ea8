package app

// BuildSettings are how an app is built from source (tug app deploy
// without --image): remembered from the last deploy that set them.
type BuildSettings struct {
	Builder    string `json:"builder,omitempty"`
	Repository string `json:"repository,omitempty"`
	RunImage   string `json:"runImage,omitempty"` // "" for the builder image
	Timeout    string `json:"timeout,omitempty"`  // a Go duration, "" for the default
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
	return s
}
