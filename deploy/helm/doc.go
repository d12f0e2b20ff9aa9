// Package helm holds no code: its test renders the Helm chart in
// deploy/helm/floe with the Helm Go module and decodes every manifest
// strictly into the Kubernetes API types. It is a package of its own so
// that only its test compiles the Helm and Kubernetes modules.
package helm
