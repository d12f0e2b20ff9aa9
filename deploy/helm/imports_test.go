package helm

import (
	_ "helm.sh/helm/v3/pkg/chart/loader"
	_ "helm.sh/helm/v3/pkg/chartutil"
	_ "helm.sh/helm/v3/pkg/engine"
	_ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	_ "k8s.io/api/apps/v1"
	_ "k8s.io/client-go/kubernetes/scheme"
	_ "sigs.k8s.io/yaml"
)
