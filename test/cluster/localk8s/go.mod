// This file only marks the module root: build-localk8s.sh builds with
// -modfile modules/<Kubernetes version>.mod (and .sum), one pair per version.
module tug.dev/localk8s

go 1.24.0
