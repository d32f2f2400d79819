// Package deploy holds no Go code: only the Kubernetes manifests of
// Gatehouse (a kustomize base, see README.md) and the tests that decode them
// with the official k8s.io/api types and check their wiring against the real
// gatehouse binary. The examples under ../examples are checked here too.
//
// Dependencies: the package imports nothing and nothing imports it. Its tests
// import only the standard library and the Kubernetes API modules (k8s.io/api,
// k8s.io/apimachinery, sigs.k8s.io/yaml, sigs.k8s.io/json); they build the
// gatehouse and demo-upstream binaries instead of importing Gatehouse packages.
//
// The tests carry the integration build tag, so that `go test ./...` does
// not compile the Kubernetes modules; `make test` runs them with
// `go test -tags integration`.
package deploy
