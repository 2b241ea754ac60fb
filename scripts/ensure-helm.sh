#!/usr/bin/env bash
# Makes sure the chart check (deploy/helm/chartcheck) has Helm: helm on the
# PATH or in $(go env GOPATH)/bin; otherwise it is built from the Go module
# proxy (pinned: the version the chart was checked with; a few minutes,
# once). The -X flags are the ones Helm's own release builds set: its
# version, and the Kubernetes version `helm template` and `helm lint`
# assume (1.37, that of the client-go it is built with; the default
# without them is 1.20). Should a later go.mod of Helm carry a replace
# directive, which `go install pkg@version` refuses, the module is built
# as the main module from a copy of its source (as ensure-jaeger.sh does).
# It says which helm the chart check will use, or where it put the one it
# built.
set -euo pipefail
version=v3.22.0
k8s_minor=37
gobin="$(go env GOPATH)/bin"
for found in "$(command -v helm || true)" "$gobin/helm"; do
  if [ -n "$found" ] && [ -x "$found" ]; then
    echo "helm: $found"
    exit 0
  fi
done
echo "installing helm $version into $gobin (for the chart check; a few minutes, once)"
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  ldflags="$ldflags -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
mkdir -p "$gobin"
installed() {
  echo "helm: $gobin/helm (not on the PATH unless $gobin is: export PATH=\"$gobin:\$PATH\")"
}
if go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$version"; then
  installed
  exit 0
fi
echo "go install refused; building helm $version from a copy of its module source"
dir=$(go mod download -json "helm.sh/helm/v3@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
src=$(mktemp -d)
trap 'chmod -R u+w "$src"; rm -rf "$src"' EXIT
cp -r "$dir/." "$src"
chmod -R u+w "$src"
(cd "$src" && go build -trimpath -ldflags "$ldflags" -o "$gobin/helm" ./cmd/helm)
installed
