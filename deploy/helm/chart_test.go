package helm

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const (
	chartDir  = "floe"
	namespace = "streaming"
	release   = "floe"
)

// kubeVersion is the Kubernetes version the chart is rendered for: the
// oldest its Chart.yaml allows.
var kubeVersion = &chartutil.KubeVersion{Version: "v1.28.0", Major: "1", Minor: "28"}

// decoder decodes manifests strictly (unknown or duplicate fields are
// errors) into the Kubernetes API types and prometheus-operator's.
var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, monitoringv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}()

// manifests is one rendering of the chart, decoded.
type manifests struct {
	objects []runtime.Object
	notes   string
	// externalSecrets are Secrets the values name that the chart does not
	// create.
	externalSecrets []string
}

// render renders the chart with vals (YAML) as `helm template` does
// (engine.Render of the chart's values coalesced with vals, for
// kubeVersion), and decodes every manifest strictly.
func render(t *testing.T, vals string) *manifests {
	t.Helper()
	m, err := tryRender(vals)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func tryRender(vals string) (*manifests, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	values, err := chartutil.ReadValues([]byte(vals))
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	if !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, kubeVersion.Version) {
		return nil, fmt.Errorf("Chart.yaml's kubeVersion %s excludes %s", ch.Metadata.KubeVersion, kubeVersion.Version)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kubeVersion
	opts := chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(ch, values.AsMap(), opts, caps)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	m := &manifests{}
	// Files in name order, so that failures repeat; each file may hold
	// several documents.
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var docs []string
	for _, p := range paths {
		switch {
		case strings.HasSuffix(p, "NOTES.txt"):
			m.notes = files[p]
		case strings.HasSuffix(p, ".yaml"):
			docs = append(docs, strings.Split("\n"+files[p], "\n---")...)
		}
	}
	for _, doc := range docs {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		obj, gvk, err := decoder.Decode([]byte(doc), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w\n%s", gvk, err, doc)
		}
		m.objects = append(m.objects, obj)
	}
	return m, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for line := range strings.Lines(doc) {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// s3Values are the least values the chart installs with.
const s3Values = `
s3:
  bucket: floe
  region: eu-west-1
  prefix: prod
`

func TestChartLint(t *testing.T) {
	values, err := chartutil.ReadValues([]byte(s3Values))
	if err != nil {
		t.Fatal(err)
	}
	l := lint.AllWithKubeVersion(chartDir, values.AsMap(), namespace, kubeVersion)
	for _, msg := range l.Messages {
		// helm lint --strict fails on warnings; an INFO (a missing icon)
		// does not.
		if msg.Severity >= support.WarningSev {
			t.Errorf("helm lint: %s", msg)
		} else {
			t.Logf("helm lint: %s", msg)
		}
	}
}

func TestChartDefaults(t *testing.T) {
	m := render(t, s3Values)
	m.checkConsistent(t)

	sts := m.statefulSets()
	if got := names(sts); !slices.Equal(got, []string{"floe-broker", "floe-coordinator", "floe-nats"}) {
		t.Fatalf("StatefulSets %v, want floe-broker, floe-coordinator, floe-nats", got)
	}

	coord := m.statefulSet(t, "floe-coordinator")
	if coord.Spec.Replicas == nil || *coord.Spec.Replicas != 3 {
		t.Errorf("coordinator replicas %v, want 3", coord.Spec.Replicas)
	}
	c := container(t, coord, "coordinator")
	args := flagMap(t, c)
	natsURL := "nats://floe-nats-0.floe-nats-headless.streaming.svc:4222,nats://floe-nats-1.floe-nats-headless.streaming.svc:4222,nats://floe-nats-2.floe-nats-headless.streaming.svc:4222"
	for flag, want := range map[string]string{
		"replicas":       "3",
		"coordinator-id": "$(POD_NAME)",
		"nats-url":       natsURL,
		"http-addr":      "0.0.0.0:8090",
		"s3-bucket":      "floe",
		"s3-region":      "eu-west-1",
		"s3-prefix":      "prod",
		"s3-path-style":  "false",
		"cluster":        "floe",
	} {
		if args[flag] != want {
			t.Errorf("coordinator --%s=%q, want %q", flag, args[flag], want)
		}
	}
	checkProbes(t, c)
	if envFrom(c, "POD_NAME") != "metadata.name" {
		t.Errorf("coordinator POD_NAME not from metadata.name")
	}
	if len(coord.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("coordinator has %d volume claim templates, want 1", len(coord.Spec.VolumeClaimTemplates))
	}
	if *coord.Spec.Template.Spec.TerminationGracePeriodSeconds < 10 {
		t.Errorf("coordinator grace period %d", *coord.Spec.Template.Spec.TerminationGracePeriodSeconds)
	}

	broker := m.statefulSet(t, "floe-broker")
	if broker.Spec.Replicas != nil {
		t.Errorf("broker StatefulSet sets replicas %d: the autoscaler owns them", *broker.Spec.Replicas)
	}
	if broker.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("broker pod management %q, want Parallel", broker.Spec.PodManagementPolicy)
	}
	if len(broker.Spec.VolumeClaimTemplates) != 0 {
		t.Errorf("brokers have volume claims: they keep no state")
	}
	b := container(t, broker, "broker")
	args = flagMap(t, b)
	for flag, want := range map[string]string{
		"advertised-addr": "$(POD_IP):9092",
		"kafka-addr":      "0.0.0.0:9092",
		"http-addr":       "0.0.0.0:8080",
		"node-id":         "$(NODE_ID)",
		"nats-url":        natsURL,
		"s3-bucket":       "floe",
		"s3-prefix":       "prod",
	} {
		if args[flag] != want {
			t.Errorf("broker --%s=%q, want %q", flag, args[flag], want)
		}
	}
	if _, ok := args["rack"]; ok {
		t.Errorf("broker has --rack without zones")
	}
	if got := envFrom(b, "POD_IP"); got != "status.podIP" {
		t.Errorf("broker POD_IP from %q, want status.podIP", got)
	}
	if got := envFrom(b, "NODE_ID"); got != "metadata.labels['apps.kubernetes.io/pod-index']" {
		t.Errorf("broker NODE_ID from %q, want the pod-index label", got)
	}
	if env(b, "AWS_ACCESS_KEY_ID") != nil {
		t.Errorf("broker has AWS credentials from a Secret, none was given (the default chain)")
	}
	checkProbes(t, b)
	if b.Resources.Requests.Cpu().IsZero() || b.Resources.Requests.Memory().IsZero() {
		t.Errorf("broker has no resource requests: %v", b.Resources.Requests)
	}
	if *broker.Spec.Template.Spec.TerminationGracePeriodSeconds <= 30 {
		t.Errorf("broker grace period %ds, not above --drain-timeout 30s", *broker.Spec.Template.Spec.TerminationGracePeriodSeconds)
	}

	hpas := m.hpas()
	if len(hpas) != 1 || hpas[0].Spec.ScaleTargetRef.Kind != "StatefulSet" || hpas[0].Spec.ScaleTargetRef.Name != "floe-broker" {
		t.Errorf("autoscalers %v, want one on StatefulSet floe-broker", names(hpas))
	}
	if got := names(m.pdbs()); !slices.Equal(got, []string{"floe-broker", "floe-coordinator", "floe-nats"}) {
		t.Errorf("PodDisruptionBudgets %v", got)
	}
	kafka := m.service(t, "floe-kafka")
	if kafka.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Kafka Service is not headless: clusterIP %q", kafka.Spec.ClusterIP)
	}
	if !strings.Contains(m.notes, "floe-kafka.streaming.svc:9092") {
		t.Errorf("NOTES do not name the bootstrap address:\n%s", m.notes)
	}
	nats := m.statefulSet(t, "floe-nats")
	if *nats.Spec.Replicas != 3 {
		t.Errorf("NATS replicas %d, want 3", *nats.Spec.Replicas)
	}
	conf := m.configMap(t, "floe-nats").Data["nats.conf"]
	for _, want := range []string{"jetstream {", "store_dir: /data", "nats://floe-nats-2.floe-nats-headless.streaming.svc:6222", "server_name: $POD_NAME"} {
		if !strings.Contains(conf, want) {
			t.Errorf("nats.conf lacks %q:\n%s", want, conf)
		}
	}
	if len(m.secrets()) != 0 {
		t.Errorf("a Secret without credentials in the values")
	}
	if len(m.serviceMonitors()) != 0 {
		t.Errorf("ServiceMonitors without serviceMonitor.enabled")
	}
}

func TestChartExternalNATS(t *testing.T) {
	const url = "nats://nats-0.nats:4222,nats://nats-1.nats:4222,nats://nats-2.nats:4222"
	m := render(t, s3Values+`
nats:
  enabled: false
  url: `+url+`
`)
	m.checkConsistent(t)
	if got := names(m.statefulSets()); !slices.Equal(got, []string{"floe-broker", "floe-coordinator"}) {
		t.Errorf("StatefulSets %v, want no NATS", got)
	}
	for _, o := range m.objects {
		if strings.Contains(name(o), "nats") {
			t.Errorf("%T %s with an external NATS", o, name(o))
		}
	}
	for _, sts := range []string{"floe-broker", "floe-coordinator"} {
		c := m.statefulSet(t, sts).Spec.Template.Spec.Containers[0]
		if got := flagMap(t, &c)["nats-url"]; got != url {
			t.Errorf("%s --nats-url=%q, want %q", sts, got, url)
		}
	}
	if _, err := tryRender(s3Values + "nats:\n  enabled: false\n"); err == nil || !strings.Contains(err.Error(), "nats.url is required") {
		t.Errorf("external NATS without a URL: %v", err)
	}
}

func TestChartSecrets(t *testing.T) {
	t.Run("existing", func(t *testing.T) {
		m := render(t, s3Values+`
  credentials:
    existingSecret: s3-creds
    accessKeyIdKey: id
    secretAccessKeyKey: secret
`)
		m.externalSecrets = []string{"s3-creds"}
		m.checkConsistent(t)
		if len(m.secrets()) != 0 {
			t.Errorf("the chart created a Secret beside an existing one")
		}
		for _, sts := range []string{"floe-broker", "floe-coordinator"} {
			c := m.statefulSet(t, sts).Spec.Template.Spec.Containers[0]
			for name, key := range map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"} {
				e := env(&c, name)
				if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
					e.ValueFrom.SecretKeyRef.Name != "s3-creds" || e.ValueFrom.SecretKeyRef.Key != key {
					t.Errorf("%s %s = %+v, want key %s of Secret s3-creds", sts, name, e, key)
				}
			}
		}
	})
	t.Run("created", func(t *testing.T) {
		m := render(t, s3Values+`
  endpoint: http://minio.minio.svc:9000
  pathStyle: true
  credentials:
    accessKeyId: floe
    secretAccessKey: floe-secret
`)
		m.checkConsistent(t)
		secrets := m.secrets()
		if len(secrets) != 1 || secrets[0].Name != "floe-s3" ||
			secrets[0].StringData["AWS_ACCESS_KEY_ID"] != "floe" || secrets[0].StringData["AWS_SECRET_ACCESS_KEY"] != "floe-secret" {
			t.Fatalf("Secrets %+v, want floe-s3 with the credentials", secrets)
		}
		c := m.statefulSet(t, "floe-broker").Spec.Template.Spec.Containers[0]
		if e := env(&c, "AWS_SECRET_ACCESS_KEY"); e == nil || e.ValueFrom.SecretKeyRef.Name != "floe-s3" {
			t.Errorf("broker's AWS_SECRET_ACCESS_KEY %+v, want from floe-s3", e)
		}
		args := flagMap(t, &c)
		if args["s3-endpoint"] != "http://minio.minio.svc:9000" || args["s3-path-style"] != "true" {
			t.Errorf("broker S3 flags %v", args)
		}
	})
	t.Run("both", func(t *testing.T) {
		_, err := tryRender(s3Values + "  credentials:\n    existingSecret: x\n    accessKeyId: y\n    secretAccessKey: z\n")
		if err == nil || !strings.Contains(err.Error(), "not both") {
			t.Errorf("existing secret and keys: %v", err)
		}
	})
	t.Run("no bucket", func(t *testing.T) {
		if _, err := tryRender(""); err == nil || !strings.Contains(err.Error(), "s3.bucket is required") {
			t.Errorf("no bucket: %v", err)
		}
	})
}

func TestChartZones(t *testing.T) {
	m := render(t, s3Values+`
broker:
  zones: [us-east-1a, us-east-1b, us-east-1c]
`)
	m.checkConsistent(t)
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	for i, zone := range zones {
		sts := m.statefulSet(t, "floe-broker-"+zone)
		start := int32(0)
		if sts.Spec.Ordinals != nil {
			start = sts.Spec.Ordinals.Start
		}
		if start != int32(i*1000) {
			t.Errorf("%s ordinals start at %d, want %d", sts.Name, start, i*1000)
		}
		c := container(t, sts, "broker")
		args := flagMap(t, c)
		if args["rack"] != zone {
			t.Errorf("%s --rack=%q, want %q", sts.Name, args["rack"], zone)
		}
		if args["internal-addr"] != "$(POD_IP):8080" {
			t.Errorf("%s --internal-addr=%q, want the pod IP", sts.Name, args["internal-addr"])
		}
		aff := sts.Spec.Template.Spec.Affinity
		if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			t.Fatalf("%s: no required node affinity", sts.Name)
		}
		term := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
		if term.Key != "topology.kubernetes.io/zone" || term.Operator != corev1.NodeSelectorOpIn || !slices.Equal(term.Values, []string{zone}) {
			t.Errorf("%s node affinity %+v, want zone %s", sts.Name, term, zone)
		}
		if sts.Spec.Template.Labels["floe.io/zone"] != zone || sts.Spec.Selector.MatchLabels["floe.io/zone"] != zone {
			t.Errorf("%s pods not labelled with their zone", sts.Name)
		}
	}
	if len(m.hpas()) != 3 {
		t.Errorf("%d autoscalers, want one per zone", len(m.hpas()))
	}
	if got := names(m.pdbs()); !slices.Equal(got, []string{"floe-broker-us-east-1a", "floe-broker-us-east-1b", "floe-broker-us-east-1c", "floe-coordinator", "floe-nats"}) {
		t.Errorf("PodDisruptionBudgets %v", got)
	}
	// The Kafka Service spans every zone.
	kafka := m.service(t, "floe-kafka")
	for _, zone := range zones {
		if !labels.SelectorFromSet(kafka.Spec.Selector).Matches(labels.Set(m.statefulSet(t, "floe-broker-"+zone).Spec.Template.Labels)) {
			t.Errorf("the Kafka Service does not select zone %s's brokers", zone)
		}
	}
	if _, err := tryRender(s3Values + "broker:\n  zones: [US_East]\n"); err == nil || !strings.Contains(err.Error(), "not a DNS label") {
		t.Errorf("a zone that cannot name a StatefulSet: %v", err)
	}
}

func TestChartVariants(t *testing.T) {
	t.Run("fixed brokers", func(t *testing.T) {
		m := render(t, s3Values+"broker:\n  replicas: 5\n  autoscaling:\n    enabled: false\n  cacheDiskSize: 20Gi\n")
		m.checkConsistent(t)
		if len(m.hpas()) != 0 {
			t.Errorf("an autoscaler with autoscaling disabled")
		}
		sts := m.statefulSet(t, "floe-broker")
		if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 5 {
			t.Errorf("broker replicas %v, want 5", sts.Spec.Replicas)
		}
		if flagMap(t, container(t, sts, "broker"))["cache-dir"] != "/var/cache/floe" {
			t.Errorf("no --cache-dir with cacheDiskSize")
		}
	})
	t.Run("service monitor", func(t *testing.T) {
		m := render(t, s3Values+"serviceMonitor:\n  enabled: true\n  labels:\n    release: prometheus\n")
		m.checkConsistent(t)
		sms := m.serviceMonitors()
		if len(sms) != 2 {
			t.Fatalf("%d ServiceMonitors, want 2", len(sms))
		}
		for _, sm := range sms {
			sel, err := metav1Selector(sm)
			if err != nil {
				t.Fatal(err)
			}
			var matched []string
			for _, svc := range m.services() {
				if sel.Matches(labels.Set(svc.Labels)) {
					matched = append(matched, svc.Name)
				}
			}
			if len(matched) != 1 {
				t.Errorf("ServiceMonitor %s selects Services %v, want exactly one", sm.Name, matched)
			}
			if sm.Labels["release"] != "prometheus" || sm.Spec.Endpoints[0].Path != "/metrics" {
				t.Errorf("ServiceMonitor %s: labels %v, endpoints %+v", sm.Name, sm.Labels, sm.Spec.Endpoints)
			}
		}
	})
	t.Run("ephemeral coordinators", func(t *testing.T) {
		m := render(t, s3Values+"coordinator:\n  persistence:\n    enabled: false\n")
		m.checkConsistent(t)
		if n := len(m.statefulSet(t, "floe-coordinator").Spec.VolumeClaimTemplates); n != 0 {
			t.Errorf("%d volume claims without persistence", n)
		}
	})
	t.Run("log replicas above NATS nodes", func(t *testing.T) {
		if _, err := tryRender(s3Values + "nats:\n  replicas: 1\n"); err == nil || !strings.Contains(err.Error(), "logReplicas") {
			t.Errorf("3 log replicas on 1 NATS node: %v", err)
		}
	})
}

// checkConsistent checks what Kubernetes would only find out at run time:
// each workload's selector matches its pods, each Service, PDB and
// autoscaler finds its target, every $(VAR) in args is defined, every
// probe's port and volume mount exists, every flag is a real flag of the
// binary the container runs, and the pods run as non-root.
func (m *manifests) checkConsistent(t *testing.T) {
	t.Helper()
	var podLabels []labels.Set
	for _, sts := range m.statefulSets() {
		sel, err := metav1LabelSelector(sts.Spec.Selector.MatchLabels)
		if err != nil {
			t.Fatal(err)
		}
		if !sel.Matches(labels.Set(sts.Spec.Template.Labels)) {
			t.Errorf("StatefulSet %s: selector %v does not match its pods' labels %v", sts.Name, sts.Spec.Selector.MatchLabels, sts.Spec.Template.Labels)
		}
		if sts.Spec.ServiceName == "" {
			t.Errorf("StatefulSet %s has no serviceName", sts.Name)
		} else if m.find(sts.Spec.ServiceName, "Service") == nil {
			t.Errorf("StatefulSet %s: its Service %s is not in the chart", sts.Name, sts.Spec.ServiceName)
		}
		podLabels = append(podLabels, labels.Set(sts.Spec.Template.Labels))
		m.checkPod(t, sts)
	}
	selects := func(sel labels.Selector) bool {
		for _, l := range podLabels {
			if sel.Matches(l) {
				return true
			}
		}
		return false
	}
	for _, svc := range m.services() {
		if !selects(labels.SelectorFromSet(svc.Spec.Selector)) {
			t.Errorf("Service %s selects no pods of the chart", svc.Name)
		}
	}
	for _, pdb := range m.pdbs() {
		sel, err := metav1LabelSelector(pdb.Spec.Selector.MatchLabels)
		if err != nil || !selects(sel) {
			t.Errorf("PodDisruptionBudget %s selects no pods of the chart (%v)", pdb.Name, err)
		}
	}
	for _, hpa := range m.hpas() {
		if ref := hpa.Spec.ScaleTargetRef; m.find(ref.Name, ref.Kind) == nil {
			t.Errorf("autoscaler %s: its target %s %s is not in the chart", hpa.Name, ref.Kind, ref.Name)
		}
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func (m *manifests) checkPod(t *testing.T, sts *appsv1.StatefulSet) {
	t.Helper()
	pod := sts.Spec.Template.Spec
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("StatefulSet %s: pods may run as root", sts.Name)
	}
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = true
		if v.ConfigMap != nil && m.find(v.ConfigMap.Name, "ConfigMap") == nil {
			t.Errorf("StatefulSet %s: ConfigMap %s is not in the chart", sts.Name, v.ConfigMap.Name)
		}
	}
	for _, c := range sts.Spec.VolumeClaimTemplates {
		volumes[c.Name] = true
	}
	for i := range pod.Containers {
		c := &pod.Containers[i]
		where := sts.Name + "/" + c.Name
		defined := map[string]bool{}
		for _, e := range c.Env {
			defined[e.Name] = true
			if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil && m.find(ref.SecretKeyRef.Name, "Secret") == nil &&
				!slices.Contains(m.externalSecrets, ref.SecretKeyRef.Name) {
				t.Errorf("%s: env %s from Secret %s, which is not in the chart", where, e.Name, ref.SecretKeyRef.Name)
			}
		}
		for _, a := range append(slices.Clone(c.Command), c.Args...) {
			for _, ref := range varRef.FindAllStringSubmatch(a, -1) {
				if !defined[ref[1]] {
					t.Errorf("%s: %q refers to $(%s), which is not in its env", where, a, ref[1])
				}
			}
		}
		ports := map[string]bool{}
		for _, p := range c.Ports {
			ports[p.Name] = true
		}
		for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
			if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.StrVal != "" && !ports[p.HTTPGet.Port.StrVal] {
				t.Errorf("%s: a probe on port %q, which the container does not name", where, p.HTTPGet.Port.StrVal)
			}
		}
		for _, vm := range c.VolumeMounts {
			if !volumes[vm.Name] {
				t.Errorf("%s: mount of volume %s, which the pod does not have", where, vm.Name)
			}
		}
		if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: root file system is writable", where)
		}
		if len(c.Command) == 1 && strings.HasPrefix(c.Command[0], "/usr/local/bin/") {
			binary := strings.TrimPrefix(c.Command[0], "/usr/local/bin/")
			known := binaryFlags(t, binary)
			for flag := range flagMap(t, c) {
				if !known[flag] {
					t.Errorf("%s: --%s is not a flag of %s (docs/configuration.md)", where, flag, binary)
				}
			}
		}
	}
}

// checkProbes checks that a floe container is live on /healthz and ready on
// /readyz, on its HTTP port.
func checkProbes(t *testing.T, c *corev1.Container) {
	t.Helper()
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}, {"startup", c.StartupProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s probe", c.Name, p.name)
			continue
		}
		if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.StrVal != "http" {
			t.Errorf("%s: %s probe on %s port %s, want %s on http", c.Name, p.name, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path)
		}
	}
}

// binaryFlags returns the flags of cmd/<binary> as docs/configuration.md
// lists them (between its generated BEGIN and END markers; the
// TestConfigurationDoc tests keep that table equal to the flag sets).
func binaryFlags(t *testing.T, binary string) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags := map[string]bool{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "<!-- BEGIN "+binary+"-flags"):
			in = true
		case strings.HasPrefix(line, "<!-- END "+binary+"-flags"):
			in = false
		case in && strings.HasPrefix(line, "| `--"):
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "| `--"), "`")
			flags[name] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(flags) < 10 {
		t.Fatalf("docs/configuration.md lists %d flags of %s", len(flags), binary)
	}
	return flags
}

// flagMap returns a container's --flag=value args by flag name, failing on
// any that is not in that form (boolean flags need it) or repeats.
func flagMap(t *testing.T, c *corev1.Container) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range c.Args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Errorf("%s: argument %q is not --flag=value", c.Name, a)
			continue
		}
		if _, dup := out[name]; dup {
			t.Errorf("%s: --%s given twice", c.Name, name)
		}
		out[name] = value
	}
	return out
}

func env(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// envFrom returns the downward API field an env var is taken from.
func envFrom(c *corev1.Container, name string) string {
	e := env(c, name)
	if e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil {
		return ""
	}
	return e.ValueFrom.FieldRef.FieldPath
}

func container(t *testing.T, sts *appsv1.StatefulSet, name string) *corev1.Container {
	t.Helper()
	for i := range sts.Spec.Template.Spec.Containers {
		if c := &sts.Spec.Template.Spec.Containers[i]; c.Name == name {
			return c
		}
	}
	t.Fatalf("StatefulSet %s has no container %s", sts.Name, name)
	return nil
}

func metav1LabelSelector(ml map[string]string) (labels.Selector, error) {
	if len(ml) == 0 {
		return nil, fmt.Errorf("empty selector")
	}
	return labels.SelectorFromSet(ml), nil
}

func metav1Selector(sm *monitoringv1.ServiceMonitor) (labels.Selector, error) {
	if len(sm.Spec.Selector.MatchExpressions) != 0 {
		return nil, fmt.Errorf("ServiceMonitor %s: match expressions", sm.Name)
	}
	return metav1LabelSelector(sm.Spec.Selector.MatchLabels)
}

func name(o runtime.Object) string {
	type named interface{ GetName() string }
	return o.(named).GetName()
}

func kind(o runtime.Object) string {
	s := fmt.Sprintf("%T", o)
	return s[strings.LastIndex(s, ".")+1:]
}

func (m *manifests) find(objName, objKind string) runtime.Object {
	for _, o := range m.objects {
		if name(o) == objName && kind(o) == objKind {
			return o
		}
	}
	return nil
}

func all[T runtime.Object](m *manifests) []T {
	var out []T
	for _, o := range m.objects {
		if v, ok := o.(T); ok {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return name(out[i]) < name(out[j]) })
	return out
}

func (m *manifests) statefulSets() []*appsv1.StatefulSet { return all[*appsv1.StatefulSet](m) }
func (m *manifests) services() []*corev1.Service         { return all[*corev1.Service](m) }
func (m *manifests) secrets() []*corev1.Secret           { return all[*corev1.Secret](m) }
func (m *manifests) pdbs() []*policyv1.PodDisruptionBudget {
	return all[*policyv1.PodDisruptionBudget](m)
}
func (m *manifests) hpas() []*autoscalingv2.HorizontalPodAutoscaler {
	return all[*autoscalingv2.HorizontalPodAutoscaler](m)
}
func (m *manifests) serviceMonitors() []*monitoringv1.ServiceMonitor {
	return all[*monitoringv1.ServiceMonitor](m)
}

// one returns the object of type T named n, failing t when there is none.
func one[T runtime.Object](t *testing.T, m *manifests, n string) T {
	t.Helper()
	objs := all[T](m)
	for _, o := range objs {
		if name(o) == n {
			return o
		}
	}
	var none T
	t.Fatalf("no %s %s in %v", kind(none), n, names(objs))
	return none
}

func (m *manifests) statefulSet(t *testing.T, n string) *appsv1.StatefulSet {
	t.Helper()
	return one[*appsv1.StatefulSet](t, m, n)
}

func (m *manifests) service(t *testing.T, n string) *corev1.Service {
	t.Helper()
	return one[*corev1.Service](t, m, n)
}

func (m *manifests) configMap(t *testing.T, n string) *corev1.ConfigMap {
	t.Helper()
	return one[*corev1.ConfigMap](t, m, n)
}

func names[T runtime.Object](objs []T) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = name(o)
	}
	return out
}

// TestChartValuesFile checks that values.yaml has no duplicate keys and that
// Chart.yaml names its API version and the Kubernetes versions it needs.
func TestChartValuesFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.APIVersion != chart.APIVersionV2 || ch.Metadata.KubeVersion == "" {
		t.Errorf("Chart.yaml: apiVersion %q, kubeVersion %q", ch.Metadata.APIVersion, ch.Metadata.KubeVersion)
	}
}

// TestStrictDecoding checks the decoder the tests rely on: a field the API
// type does not have fails, as a typo in a template would.
func TestStrictDecoding(t *testing.T) {
	doc := "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  clusterIP: None\n  selecter: {a: b}\n"
	if _, _, err := decoder.Decode([]byte(doc), nil, nil); err == nil || !strings.Contains(err.Error(), "selecter") {
		t.Errorf("a Service with an unknown field decoded: %v", err)
	}
	doc = "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: x\nspec:\n  endpoint: []\n"
	if _, _, err := decoder.Decode([]byte(doc), nil, nil); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Errorf("a ServiceMonitor with an unknown field decoded: %v", err)
	}
}
