// Package deploy holds no Go code: only the Kubernetes manifests of
// Gatehouse (a kustomize base, see README.md) and the tests that decode them
// with the official k8s.io/api types and check their wiring against the real
// gatehouse binary. The examples under ../examples are checked here too.
package deploy
