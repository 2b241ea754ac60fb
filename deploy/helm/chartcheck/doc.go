// Package chartcheck checks the Helm chart in deploy/helm/seckill: its
// tests run `helm lint` and `helm template` (with the default values and
// with values-production.yaml) and decode every rendered manifest strictly
// into the Kubernetes and Prometheus Operator Go types, so an unknown or
// misspelt field or kind fails, then assert what matters (probes, the
// migration hook, secrets only through secretKeyRef, the alert rules, the
// Temporal TLS volume).
//
// It is a module of its own so that the Kubernetes dependencies stay out of
// seckill's. Run it with `make test-chart` (which installs helm first with
// scripts/ensure-helm.sh).
package chartcheck
