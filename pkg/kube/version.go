package kube

import (
	"context"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/version"
)

// serverVersionTimeout keeps `tug version` snappy when the cluster is away;
// the version request is tiny, so a healthy cluster answers well within it.
const serverVersionTimeout = 5 * time.Second

// ServerInfo is the server half of `tug version -o json`.
type ServerInfo struct {
	Version   string `json:"version"`
	Platform  string `json:"platform"`
	GoVersion string `json:"goVersion"`
}

// VersionResult is what `tug version` prints; its JSON shape is documented
// in docs/output.md. Server is absent with --client or when the cluster
// cannot be reached.
type VersionResult struct {
	Client version.Info `json:"client"`
	Server *ServerInfo  `json:"server,omitempty"`
}

// Versions reports this binary's version and, unless clientOnly, the
// cluster's. Failing to reach the cluster is not fatal: the result still
// has the client half, and serverErr says why the server half is missing.
func Versions(ctx context.Context, client func() (kubernetes.Interface, error), clientOnly bool) (res VersionResult, serverErr error) {
	res.Client = version.Get()
	if clientOnly {
		return res, nil
	}
	c, err := client()
	if err != nil {
		return res, TranslateError(err)
	}
	ctx, cancel := context.WithTimeout(ctx, serverVersionTimeout)
	defer cancel()
	info, err := discovery.ToServerVersionInterfaceWithContext(c.Discovery()).ServerVersionWithContext(ctx)
	if err != nil {
		return res, TranslateError(err)
	}
	res.Server = &ServerInfo{Version: info.GitVersion, Platform: info.Platform, GoVersion: info.GoVersion}
	return res, nil
}
