package deploy

import (
	"context"

	"tug.dev/tug/pkg/app"
)

// StagedConfig is config stored with --no-restart (or before the first
// deploy) that the units do not have yet: the next rollout (a deploy, a
// config change, a rollback, a settings release) takes it in; a restart,
// a scale or a stop/start do not.
type StagedConfig struct {
	// Release is the newest staged release (0: nothing staged), Running
	// the release the units run (0: none yet).
	Release, Running int
	// Live is the config the units run with; Next what the next rollout
	// gives them.
	Live, Next app.ConfigMap
}

// Staged reads what config of a is staged.
func Staged(ctx context.Context, store *app.Store, a *app.App) (*StagedConfig, error) {
	base, next, err := BaseRelease(ctx, store, a)
	if err != nil {
		return nil, err
	}
	s := &StagedConfig{Running: a.Release, Live: app.ConfigMap{}, Next: next}
	if base == nil || base.Version == a.Release {
		s.Live = next
		return s, nil
	}
	s.Release = base.Version
	if a.Release > 0 {
		_, live, err := store.GetRelease(ctx, a.Name, a.Release)
		if err != nil {
			return nil, err
		}
		s.Live = live
	}
	return s, nil
}

// Key says how key stands: "" live (the units have this value), "set"
// (staged, the units do not have it), "changed" (staged, the units have
// another value), "unset" (the units have it; the next rollout removes it).
func (s *StagedConfig) Key(key string) string {
	live, inLive := s.Live[key]
	next, inNext := s.Next[key]
	switch {
	case inNext && !inLive:
		return "set"
	case inNext && live != next:
		return "changed"
	case inLive && !inNext:
		return "unset"
	}
	return ""
}

// Any says whether anything is staged.
func (s *StagedConfig) Any() bool { return !s.Live.Equal(s.Next) }

// Diff is the staged change, "+K, ~L, -M".
func (s *StagedConfig) Diff() string { return s.Live.Diff(s.Next) }
