// Package deploy holds no code: its tests check the deployment files at the
// root of the repository and under deploy/. TestDockerfile parses the
// Dockerfile with BuildKit's parser, TestCompose validates
// docker-compose.yml against the Compose specification's schema, and
// TestMonitoring scrapes a real broker's and coordinator's /metrics and
// checks that every metric the Grafana dashboard (deploy/grafana/floe.json)
// and the Prometheus rules (deploy/prometheus/floe-rules.yaml) name is
// served; TestMetricsDoc builds docs/metrics.md's table from the same
// cluster's /metrics and fails when the page disagrees. The Helm chart's
// test lives in deploy/helm, its own package, so that only it compiles the
// Kubernetes and Helm modules.
package deploy
