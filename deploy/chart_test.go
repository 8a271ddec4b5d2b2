package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"roomhub/hub"
	"roomhub/internal/ports"
	"roomhub/internal/testbin"
	"roomhub/internal/testredis"
)

const chartDir = "helm/roomhub"

// kubeVersion is the cluster the chart is rendered for: the oldest it
// supports (Chart.yaml's kubeVersion; preStop's sleep action).
var kubeVersion = chartutil.KubeVersion{Version: "v1.30.0", Major: "1", Minor: "30"}

// objects is one rendering of the chart, each object decoded into the type
// of the field whose tag names its apiVersion and kind.
type objects struct {
	Deployment     *appsv1.Deployment                     `kind:"apps/v1 Deployment"`
	Services       []*corev1.Service                      `kind:"v1 Service"`
	Secret         *corev1.Secret                         `kind:"v1 Secret"`
	PDB            *policyv1.PodDisruptionBudget          `kind:"policy/v1 PodDisruptionBudget"`
	HPA            *autoscalingv2.HorizontalPodAutoscaler `kind:"autoscaling/v2 HorizontalPodAutoscaler"`
	Ingress        *networkingv1.Ingress                  `kind:"networking.k8s.io/v1 Ingress"`
	ServiceMonitor *monitoringv1.ServiceMonitor           `kind:"monitoring.coreos.com/v1 ServiceMonitor"`
	NetworkPolicy  *networkingv1.NetworkPolicy            `kind:"networking.k8s.io/v1 NetworkPolicy"`
	Notes          string                                 // NOTES.txt, as helm install prints it
}

// service is the rendered Service of that name, or nil.
func (o objects) service(name string) *corev1.Service {
	for _, s := range o.Services {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// strict decodes one YAML document into v, refusing unknown fields: a typo
// in the chart fails here, as the API server would refuse it.
func strict(doc []byte, v any) error { return yaml.UnmarshalStrict(doc, v) }

// render renders the chart with the values files given (over values.yaml)
// and decodes every object; an object of a kind it does not know fails.
func render(t *testing.T, valueFiles ...string) objects {
	t.Helper()
	out, err := renderErr(valueFiles...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func renderErr(valueFiles ...string) (objects, error) {
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = kubeVersion
	return renderWith(caps, valueFiles...)
}

// renderWith is renderErr for a cluster of those capabilities.
func renderWith(caps *chartutil.Capabilities, valueFiles ...string) (objects, error) {
	var o objects
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return o, err
	}
	vals, err := readValues(valueFiles...)
	if err != nil {
		return o, err
	}
	if kv := chrt.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return o, fmt.Errorf("chart requires kubeVersion %s, which is incompatible with Kubernetes %s (as helm template says)", kv, caps.KubeVersion.String())
	}
	rv, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{Name: "roomhub", Namespace: "chat", Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return o, err
	}
	files, err := engine.Engine{Strict: true}.Render(chrt, rv)
	if err != nil {
		return o, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			o.Notes = files[name]
			continue
		}
		for _, doc := range bytes.Split([]byte(files[name]), []byte("\n---")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			if err := o.add(doc); err != nil {
				return o, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return o, nil
}

// readValues reads values files, a later one over an earlier one.
func readValues(files ...string) (map[string]any, error) {
	vals := map[string]any{}
	for _, f := range files {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			return nil, err
		}
		vals = chartutil.CoalesceTables(v.AsMap(), vals)
	}
	return vals, nil
}

func (o *objects) add(doc []byte) error {
	var head struct{ APIVersion, Kind string }
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return err
	}
	if head.Kind == "" { // only comments
		return nil
	}
	v := reflect.ValueOf(o).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).Tag.Get("kind") == head.APIVersion+" "+head.Kind {
			f := v.Field(i)
			if f.Kind() == reflect.Slice { // a kind the chart renders more than one of
				obj := reflect.New(f.Type().Elem().Elem())
				f.Set(reflect.Append(f, obj))
				return strict(doc, obj.Interface())
			}
			obj := reflect.New(f.Type().Elem())
			f.Set(obj)
			return strict(doc, obj.Interface())
		}
	}
	return fmt.Errorf("an object of an unexpected kind: %s %s", head.APIVersion, head.Kind)
}

// helm lint, with the defaults and with everything on.
func TestChart_Lints(t *testing.T) {
	for _, values := range [][]string{nil, {"helm/roomhub/ci/full-values.yaml"}} {
		vals, err := readValues(values...)
		if err != nil {
			t.Fatal(err)
		}
		linter := lint.AllWithKubeVersion(chartDir, vals, "chat", &kubeVersion)
		for _, m := range linter.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("helm lint %v: %s", values, m)
			}
		}
	}
}

// The decoder refuses what the API server would: a misspelt field fails.
func TestChart_StrictDecodingRefusesATypo(t *testing.T) {
	doc := []byte("apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: 2\n  strategy:\n    type: RollingUpdate\n    rollingUpdat:\n      maxSurge: 1\n")
	var o objects
	if err := o.add(doc); err == nil || !strings.Contains(err.Error(), "rollingUpdat") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}

func container(t *testing.T, o objects) corev1.Container {
	t.Helper()
	if o.Deployment == nil || len(o.Deployment.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("no deployment with one container")
	}
	return o.Deployment.Spec.Template.Spec.Containers[0]
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

// The pod runs as a non-root user on a read-only root filesystem, with no
// capabilities and no service account token, within its resources.
func TestChart_PodIsLockedDown(t *testing.T) {
	o := render(t)
	pod := o.Deployment.Spec.Template.Spec
	c := container(t, o)
	sc := c.SecurityContext
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		pod.SecurityContext.RunAsUser == nil || *pod.SecurityContext.RunAsUser == 0 {
		t.Fatalf("pod security context %+v", pod.SecurityContext)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
		*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Fatalf("container security context %+v", sc)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Fatal("the service account token is mounted")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Fatalf("resources %+v", c.Resources)
	}
}

// Readiness asks /health and rides out a Redis blip; liveness never asks
// Redis (it would restart every pod in an outage); a rolling update takes
// one pod at a time out only once its replacement serves; SIGTERM comes after
// the preStop sleep, and the grace period covers the sleep and the hub's own
// bounded shutdown (which covers the streams' spread).
func TestChart_ProbesAndShutdown(t *testing.T) {
	o := render(t)
	c := container(t, o)
	r, l := c.ReadinessProbe, c.LivenessProbe
	if r == nil || r.HTTPGet == nil || r.HTTPGet.Path != "/health" || r.HTTPGet.Port.String() != "http" {
		t.Fatalf("readiness %+v", r)
	}
	if blip := time.Duration(r.PeriodSeconds*r.FailureThreshold) * time.Second; blip < 10*time.Second {
		t.Fatalf("readiness fails after a %v Redis blip", blip)
	}
	if l == nil || l.HTTPGet != nil || l.Exec != nil || l.TCPSocket == nil {
		t.Fatalf("liveness must not depend on Redis (/health is 503 without it): %+v", l)
	}
	if s := c.StartupProbe; s == nil || s.TCPSocket == nil {
		t.Fatalf("startup %+v", s)
	}
	ru := o.Deployment.Spec.Strategy.RollingUpdate
	if ru == nil || ru.MaxUnavailable.IntValue() != 0 || ru.MaxSurge.IntValue() < 1 {
		t.Fatalf("rolling update %+v", ru)
	}
	pre := c.Lifecycle.PreStop
	if pre == nil || pre.Sleep == nil || pre.Sleep.Seconds < 1 {
		t.Fatalf("preStop %+v", pre)
	}
	grace := time.Duration(*o.Deployment.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	need := time.Duration(pre.Sleep.Seconds)*time.Second + hub.ShutdownTimeout
	if hub.DefaultConfig().ShutdownSpread >= hub.ShutdownTimeout || grace < need {
		t.Fatalf("grace period %v; the preStop sleep and the hub's shutdown take up to %v", grace, need)
	}
}

// Every secret comes from a Secret; REDIS_URL is built from url, sentinel or
// cluster, or taken from the operator's own Secret.
func TestChart_RedisAndSecrets(t *testing.T) {
	write := valuesWriter(t)
	for _, c := range []struct {
		name, values, url string
	}{
		{"url", "", "redis://redis:6379"},
		{"sentinel", "redis:\n  password: p@ss\n  sentinel:\n    addresses: [s0:26379, s1:26379]\n    masterName: main\n", "redis+sentinel://:p%40ss@s0:26379,s1:26379/main"},
		{"cluster", "redis:\n  cluster:\n    addresses: [n0:6379, n1:6379, n2:6379]\n", "redis+cluster://n0:6379,n1:6379,n2:6379"},
	} {
		files := []string{}
		if c.values != "" {
			files = append(files, write(c.name+".yaml", c.values))
		}
		o := render(t, files...)
		env := envOf(container(t, o))
		ref := env["REDIS_URL"].ValueFrom
		if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != o.Secret.Name {
			t.Fatalf("%s: REDIS_URL %+v", c.name, env["REDIS_URL"])
		}
		if got := string(o.Secret.Data[ref.SecretKeyRef.Key]); got != c.url {
			t.Fatalf("%s: REDIS_URL %q, want %q", c.name, got, c.url)
		}
		for _, k := range []string{"JWT_SECRET", "INTERNAL_API_KEY"} {
			ref := env[k].ValueFrom
			if env[k].Value != "" || ref == nil || ref.SecretKeyRef == nil || len(o.Secret.Data[ref.SecretKeyRef.Key]) < 32 {
				t.Fatalf("%s: %s %+v", c.name, k, env[k])
			}
		}
	}

	own := write("own.yaml", "redis:\n  existingSecret: my-redis\n  existingSecretKey: url\nsecrets:\n  existingSecret: my-secrets\n")
	o := render(t, own)
	env := envOf(container(t, o))
	if r := env["REDIS_URL"].ValueFrom.SecretKeyRef; r.Name != "my-redis" || r.Key != "url" {
		t.Fatalf("REDIS_URL from %+v", r)
	}
	if r := env["JWT_SECRET"].ValueFrom.SecretKeyRef; r.Name != "my-secrets" {
		t.Fatalf("JWT_SECRET from %+v", r)
	}
	if o.Secret != nil {
		t.Fatalf("the chart made a Secret beside the operator's own: %+v", o.Secret.Data)
	}

	for _, bad := range []string{
		"redis:\n  url: redis://r:6379\n  sentinel:\n    addresses: [s0:26379]\n", // Sentinel would win silently
		"redis:\n  url: redis://r:6379\n  existingSecret: mine\n",
		"redis:\n  sentinel:\n    addresses: [s0:26379]\n  cluster:\n    addresses: [n0:6379]\n",
		"redis:\n  urll: redis://x\n",       // a typo: the schema refuses it
		"config:\n  REDIS_URL: redis://x\n", // secrets never go in plain config
	} {
		if _, err := renderErr(write("bad.yaml", bad)); err == nil {
			t.Fatalf("rendered with %q", bad)
		}
	}
}

// valuesWriter writes values files into a folder of the test's: write(name,
// body) answers the file's path.
func valuesWriter(t *testing.T) func(name, body string) string {
	dir := t.TempDir()
	return func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// A channel the hub sends itself turned on in config without its keys
// fails to render, naming the value (the pod would stop at start-up);
// with them, or with the operator's own Secret, it renders.
func TestChart_ChannelsOnNeedTheirKeys(t *testing.T) {
	write := valuesWriter(t)
	for want, values := range map[string]string{
		"config.WEBPUSH_VAPID_PUBLIC_KEY": "config:\n  DELIVERY_CHANNELS: webpush\n",
		"secrets.webpushVapidPrivateKey":  "config:\n  DELIVERY_CHANNELS: webpush\n  WEBPUSH_VAPID_PUBLIC_KEY: B\n  WEBPUSH_SUBJECT: mailto:a@b.c\n",
		"secrets.fcmCredentials":          "config:\n  DELIVERY_CHANNELS: email, fcm\n",
		"config.APNS_TOPIC":               "config:\n  DELIVERY_CHANNELS: apns\n  APNS_KEY_ID: K\n  APNS_TEAM_ID: T\nsecrets:\n  apnsPrivateKey: k\n",
	} {
		if _, err := renderErr(write("v.yaml", values)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want a failure naming %s", values, err, want)
		}
	}
	for _, values := range []string{
		"config:\n  DELIVERY_CHANNELS: fcm,apns\n  APNS_KEY_ID: K\n  APNS_TEAM_ID: T\n  APNS_TOPIC: com.x\nsecrets:\n  fcmCredentials: '{}'\n  apnsPrivateKey: k\n",
		"config:\n  DELIVERY_CHANNELS: fcm\nsecrets:\n  existingSecret: mine\n",
	} {
		if _, err := renderErr(write("v.yaml", values)); err != nil {
			t.Errorf("%q: %v", values, err)
		}
	}
}

// Each example values file (the defaults, ci/full-values.yaml) starts a
// healthy hub: the built binary, run with the environment the chart
// renders (the Secret's values read as the pod would), on a real Redis in
// place of the cluster's.
func TestChart_ExampleValuesStartAHealthyHub(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "roomhub")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = ".." // the hub's own module: its dependencies are not this one's
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	rs := testredis.Start(t)
	for _, file := range []string{"", filepath.Join(chartDir, "ci", "full-values.yaml")} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var files []string
			if file != "" {
				files = append(files, file)
			}
			o := render(t, files...)
			var env []string
			for _, e := range container(t, o).Env {
				v := e.Value
				if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil {
					v = string(o.Secret.Data[r.SecretKeyRef.Key])
				}
				switch e.Name {
				case "REDIS_URL":
					v = rs.URL() // the cluster's Redis, here
				case "METRICS_ADDR":
					v = fmt.Sprintf("127.0.0.1:%d", ports.Free(t, false))
				case "SERVER_PORT":
					continue // testbin chooses one
				}
				env = append(env, e.Name+"="+v)
			}
			url, proc, logs := testbin.Start(t, bin, env...)
			deadline := time.Now().Add(20 * time.Second)
			for testbin.HealthStatus(url) != 200 {
				select {
				case <-proc.Exited():
					t.Fatalf("the hub the values render stopped; its log:\n%s", logs)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("the hub the values render is not healthy within 20 s; its log:\n%s", logs)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// helm template renders without --kube-version (Helm's default
// capabilities, an old Kubernetes): the chart pins no kubeVersion, and the
// 1.30 it needs (preStop's sleep) is written in docs/operations.md.
func TestChart_RendersWithoutAKubeVersion(t *testing.T) {
	if _, err := renderWith(chartutil.DefaultCapabilities.Copy(), filepath.Join(chartDir, "ci", "full-values.yaml")); err != nil {
		t.Fatal(err)
	}
}

// Each push channel's key has a Secret slot (DESIGN, Kubernetes): given,
// the chart's Secret holds it and the pod reads it from there; from the
// operator's own Secret under the slot's key; absent, no variable. A key
// in plain config is refused.
func TestChart_PushChannelKeysHaveSecretSlots(t *testing.T) {
	write := valuesWriter(t)
	keys := map[string]string{
		"WEBPUSH_VAPID_PRIVATE_KEY": "vapid-private", "FCM_CREDENTIALS": `{"type":"service_account"}`,
		"APNS_PRIVATE_KEY": "-----BEGIN PRIVATE KEY-----\nMIG\n-----END PRIVATE KEY-----\n",
	}
	o := render(t, write("keys.yaml", "secrets:\n  webpushVapidPrivateKey: vapid-private\n  fcmCredentials: '{\"type\":\"service_account\"}'\n"+
		"  apnsPrivateKey: |\n    -----BEGIN PRIVATE KEY-----\n    MIG\n    -----END PRIVATE KEY-----\n"))
	env := envOf(container(t, o))
	for v, want := range keys {
		ref := env[v].ValueFrom
		if env[v].Value != "" || ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != o.Secret.Name {
			t.Fatalf("%s: %+v", v, env[v])
		}
		if got := string(o.Secret.Data[ref.SecretKeyRef.Key]); got != strings.ReplaceAll(want, `\n`, "\n") {
			t.Errorf("%s: the Secret holds %q, want %q", v, got, want)
		}
	}
	env = envOf(container(t, render(t)))
	for v := range keys {
		if _, ok := env[v]; ok {
			t.Errorf("%s set with no key given", v)
		}
	}
	env = envOf(container(t, render(t, write("own.yaml", "secrets:\n  existingSecret: my-secrets\n"))))
	for v, slot := range map[string]string{"FCM_CREDENTIALS": "fcm-credentials", "APNS_PRIVATE_KEY": "apns-private-key"} {
		if r := env[v].ValueFrom; r == nil || r.SecretKeyRef.Name != "my-secrets" || r.SecretKeyRef.Key != slot {
			t.Errorf("%s with an existing Secret: %+v", v, env[v])
		}
	}
	for _, v := range []string{"FCM_CREDENTIALS", "APNS_PRIVATE_KEY"} {
		if _, err := renderErr(write("bad.yaml", "config:\n  "+v+": x\n")); err == nil {
			t.Errorf("%s in plain config rendered", v)
		}
	}
}

// Everything on: the PDB, the HPA on open streams per pod (the metric the
// hub exports and the adapter's rule serves), the ServiceMonitor on the
// metrics port, the ingress with the SSE settings, tracing.
func TestChart_EverythingOn(t *testing.T) {
	o := render(t, "helm/roomhub/ci/full-values.yaml")
	sel := o.Deployment.Spec.Selector.MatchLabels
	if o.PDB == nil || o.PDB.Spec.MaxUnavailable.IntValue() != 1 || fmt.Sprint(o.PDB.Spec.Selector.MatchLabels) != fmt.Sprint(sel) {
		t.Fatalf("PDB %+v", o.PDB)
	}
	if o.Deployment.Spec.Replicas != nil {
		t.Fatal("replicas set beside an HPA: every upgrade would reset the HPA's count")
	}
	if o.HPA == nil || o.HPA.Spec.ScaleTargetRef.Name != o.Deployment.Name || o.HPA.Spec.MinReplicas == nil || *o.HPA.Spec.MinReplicas < 2 {
		t.Fatalf("HPA %+v", o.HPA)
	}
	m := o.HPA.Spec.Metrics[0]
	if m.Type != autoscalingv2.PodsMetricSourceType || m.Pods.Metric.Name != adapterMetric(t) || m.Pods.Target.AverageValue.Value() != 5000 {
		t.Fatalf("HPA metric %+v", m)
	}
	if d := o.HPA.Spec.Behavior.ScaleDown; d == nil || d.StabilizationWindowSeconds == nil || *d.StabilizationWindowSeconds < 300 {
		t.Fatalf("scale down %+v", d)
	}
	sm := o.ServiceMonitor
	if sm == nil || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Fatalf("ServiceMonitor %+v", sm)
	}
	ms := o.service(o.Deployment.Name + "-metrics")
	if ms == nil || len(ms.Spec.Ports) != 1 || !selects(sm.Spec.Selector.MatchLabels, ms.Labels) || selects(sm.Spec.Selector.MatchLabels, o.service(o.Deployment.Name).Labels) {
		t.Fatalf("the ServiceMonitor must select the metrics Service alone: %v", sm.Spec.Selector.MatchLabels)
	}
	env := envOf(container(t, o))
	if env["METRICS_ADDR"].Value != fmt.Sprintf(":%d", ms.Spec.Ports[0].Port) {
		t.Fatalf("METRICS_ADDR %q, metrics service port %v", env["METRICS_ADDR"].Value, ms.Spec.Ports[0].Port)
	}
	ing := o.Ingress
	if ing == nil || len(ing.Spec.TLS) != 1 {
		t.Fatalf("ingress %+v", ing)
	}
	for k, v := range map[string]string{
		"nginx.ingress.kubernetes.io/proxy-buffering":    "off",
		"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600",
	} {
		if ing.Annotations[k] != v {
			t.Fatalf("ingress annotation %s=%q", k, ing.Annotations[k])
		}
	}
	if env["OTEL_EXPORTER_OTLP_ENDPOINT"].Value == "" || env["OTEL_TRACES_SAMPLER"].Value != "parentbased_traceidratio" {
		t.Fatalf("tracing env %+v", env)
	}
}

// adapterMetric reads the Prometheus adapter's rule strictly and returns the
// metric it serves; its series must be the gauge the hub exports.
func adapterMetric(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("prometheus-adapter-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type rule struct {
		SeriesQuery string `json:"seriesQuery"`
		Resources   struct {
			Overrides map[string]struct {
				Resource string `json:"resource"`
			} `json:"overrides"`
		} `json:"resources"`
		Name struct {
			Matches string `json:"matches"`
			As      string `json:"as"`
		} `json:"name"`
		MetricsQuery string `json:"metricsQuery"`
	}
	var v struct {
		Rules struct {
			Default bool   `json:"default"`
			Custom  []rule `json:"custom"`
		} `json:"rules"`
	}
	if err := strict(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Rules.Custom) != 1 {
		t.Fatalf("%d rules", len(v.Rules.Custom))
	}
	r := v.Rules.Custom[0]
	if !strings.HasPrefix(r.SeriesQuery, "sse_active_connections{") || r.Resources.Overrides["pod"].Resource != "pod" ||
		r.Resources.Overrides["namespace"].Resource != "namespace" || !strings.Contains(r.MetricsQuery, "<<.GroupBy>>") {
		t.Fatalf("adapter rule %+v", r)
	}
	b, _ := json.Marshal(r)
	t.Logf("adapter rule %s", b)
	return r.Name.As
}

// selects says whether a selector's labels all sit on an object's.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// Every Service selects the pods, and names the ports the container has;
// the Ingress's backends are the API Service's http port; the API Service
// has no metrics port (hardening IV, 6 and 11).
func TestChart_ServicesSelectThePods(t *testing.T) {
	for _, values := range [][]string{nil, {"helm/roomhub/ci/full-values.yaml"}} {
		o := render(t, values...)
		pod := o.Deployment.Spec.Template.Labels
		cports := map[string]bool{}
		for _, p := range container(t, o).Ports {
			cports[p.Name] = true
		}
		if len(o.Services) != 2 {
			t.Fatalf("%v: %d services, want the API's and the metrics'", values, len(o.Services))
		}
		for _, svc := range o.Services {
			if !selects(svc.Spec.Selector, pod) {
				t.Fatalf("%v: service %s selects %v, the pods carry %v", values, svc.Name, svc.Spec.Selector, pod)
			}
			for _, p := range svc.Spec.Ports {
				if !cports[p.TargetPort.String()] {
					t.Fatalf("%v: service %s targets port %s, which the container does not name", values, svc.Name, p.TargetPort.String())
				}
			}
		}
		api := o.service(o.Deployment.Name)
		if api == nil || len(api.Spec.Ports) != 1 || api.Spec.Ports[0].Name != "http" {
			t.Fatalf("%v: the API service %+v, want its http port alone", values, api)
		}
		if o.Ingress == nil {
			continue
		}
		for _, p := range o.Ingress.Spec.Rules[0].HTTP.Paths {
			if b := p.Backend.Service; b == nil || b.Name != api.Name || b.Port.Name != "http" {
				t.Fatalf("%v: ingress path %s goes to %+v", values, p.Path, p.Backend)
			}
		}
	}
}

// routed says whether an ingress path takes url: Prefix by whole path
// elements, Exact as it is, ImplementationSpecific as ingress-nginx's
// use-regex reads it (anchored at the start).
func routed(t *testing.T, p networkingv1.HTTPIngressPath, url string) bool {
	switch *p.PathType {
	case networkingv1.PathTypeExact:
		return url == p.Path
	case networkingv1.PathTypePrefix:
		return url == p.Path || strings.HasPrefix(url, strings.TrimSuffix(p.Path, "/")+"/")
	}
	re, err := regexp.Compile("(?i)^" + p.Path)
	if err != nil {
		t.Fatalf("ingress path %s: %v", p.Path, err)
	}
	return re.MatchString(url)
}

// The Ingress carries what browsers call and nothing else: never publish,
// batch, /api/v1/internal/* (the ingest dead list holds event bodies),
// /metrics or /dev/*; with it on, the hub reads the client's address from
// the controller's header (hardening IV, 2 and 6).
func TestChart_IngressCarriesOnlyTheBrowsersRoutes(t *testing.T) {
	o := render(t, "helm/roomhub/ci/full-values.yaml")
	takes := func(url string) bool {
		for _, p := range o.Ingress.Spec.Rules[0].HTTP.Paths {
			if routed(t, p, url) {
				return true
			}
		}
		return false
	}
	for url, want := range map[string]bool{
		"/api/v1/rooms/42/stream": true, "/api/v1/rooms/42/events": true, "/api/v1/rooms/42/presence/heartbeat": true,
		"/api/v1/stream": true, "/api/v1/notifications/stream": true, "/api/v1/notifications": true,
		"/api/v1/notifications/unread": true, "/api/v1/notifications/counts": true, "/api/v1/notifications/read-all": true,
		"/api/v1/notifications/settings": true, "/api/v1/notifications/bulk": true,
		"/api/v1/notifications/42:1708070400000-0": true, "/api/v1/notifications/42:1708070400000-0/read": true,
		"/api/v1/notifications/42:1708070400000-0/snooze": true, "/api/v1/push/subscriptions": true,
		"/api/v1/push/vapid-public-key": true, "/api/v1/stream-tickets": true, "/static/roomhub.js": true, "/health": true,

		"/api/v1/notifications/publish": false, "/api/v1/notifications/publish/batch": false,
		"/api/v1/notifications/PUBLISH": false, "/api/v1/notifications/publish/": false,
		"/api/v1/internal/deliveries/dead": false, "/api/v1/internal/ingest/dead": false,
		"/api/v1/internal/notifications/42:1-0/deliveries": false, "/metrics": false, "/dev/token": false,
		"/api/v1/notifications/42:1-0/read/x": false,
	} {
		if got := takes(url); got != want {
			t.Errorf("the ingress routes %s: %v, want %v", url, got, want)
		}
	}
	env := envOf(container(t, o))
	if env["TRUSTED_PROXY_HEADER"].Value != "X-Forwarded-For" {
		t.Errorf("with the ingress on, TRUSTED_PROXY_HEADER = %q", env["TRUSTED_PROXY_HEADER"].Value)
	}
	if _, set := envOf(container(t, render(t)))["TRUSTED_PROXY_HEADER"]; set {
		t.Error("TRUSTED_PROXY_HEADER set without the ingress: a client could write its own address")
	}
}

// The NetworkPolicy, on by default: the pods alone; the API port from the
// ingress controller and the backend, the metrics port from monitoring
// alone; out only DNS, Redis, OTLP, HTTPS and the backend (hardening IV, 6).
func TestChart_NetworkPolicy(t *testing.T) {
	o := render(t)
	np := o.NetworkPolicy
	if np == nil {
		t.Fatal("no NetworkPolicy by default")
	}
	if !selects(np.Spec.PodSelector.MatchLabels, o.Deployment.Spec.Template.Labels) || len(np.Spec.PolicyTypes) != 2 {
		t.Fatalf("policy %+v", np.Spec)
	}
	for _, r := range np.Spec.Ingress {
		if len(r.From) == 0 {
			t.Fatal("an ingress rule from anywhere")
		}
	}
	// What each port admits, pod by pod (namespace, pod labels): the
	// release is in "chat" (hardening V, 3: namespaceSelector {} beside the
	// backend's podSelector admitted its pods from every namespace).
	controller := map[string]string{"app.kubernetes.io/name": "ingress-nginx"}
	backend := map[string]string{"app.kubernetes.io/part-of": "backend"}
	other := map[string]string{"app": "other"}
	for _, c := range []struct {
		port, ns string
		pod      map[string]string
		want     bool
	}{
		{"http", "ingress-nginx", controller, true}, {"http", "chat", backend, true},
		{"http", "evil", backend, false}, {"http", "evil", controller, false}, {"http", "ingress-nginx", other, false},
		{"http", "chat", other, false}, {"http", "monitoring", other, false},
		{"metrics", "monitoring", other, true}, {"metrics", "chat", backend, false}, {"metrics", "evil", other, false},
		{"metrics", "ingress-nginx", controller, false},
	} {
		if got := admits(np, np.Spec.Ingress, c.port, c.ns, c.pod); got != c.want {
			t.Errorf("port %s from a pod %v in %q: admitted %v, want %v", c.port, c.pod, c.ns, got, c.want)
		}
	}
	if !reaches(np, "chat", backend) || reaches(np, "evil", backend) || reaches(np, "chat", other) {
		t.Error("egress to the backend's pods: want those of the release's namespace alone")
	}
	// Another namespace only when a value names it.
	api, err := os.CreateTemp(t.TempDir(), "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = api.WriteString("networkPolicy:\n  backend:\n    namespaceSelector:\n      matchLabels:\n        kubernetes.io/metadata.name: api\n")
	api.Close()
	named := render(t, api.Name()).NetworkPolicy
	if !admits(named, named.Spec.Ingress, "http", "api", backend) || admits(named, named.Spec.Ingress, "http", "chat", backend) ||
		admits(named, named.Spec.Ingress, "http", "evil", backend) || !reaches(named, "api", backend) || reaches(named, "evil", backend) {
		t.Error("with the backend's namespace named api: want its pods in api alone")
	}
	out := map[string]bool{}
	for _, r := range np.Spec.Egress {
		for _, p := range r.Ports {
			out[p.Port.String()+"/"+string(*p.Protocol)] = true
		}
	}
	for _, p := range []string{"53/UDP", "53/TCP", "6379/TCP", "26379/TCP", "4318/TCP", "443/TCP"} {
		if !out[p] {
			t.Errorf("egress lacks %s: %v", p, out)
		}
	}
	off, err := os.CreateTemp(t.TempDir(), "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = off.WriteString("networkPolicy:\n  enabled: false\n")
	off.Close()
	if render(t, off.Name()).NetworkPolicy != nil {
		t.Fatal("rendered with networkPolicy.enabled false")
	}
}

// peerSelects says whether a NetworkPolicy peer of np (in the release's
// namespace, "chat") selects a pod with labels pod in namespace ns, as
// Kubernetes reads it: no namespaceSelector is np's own namespace, an
// empty one every namespace; no podSelector every pod.
func peerSelects(np *networkingv1.NetworkPolicy, peer networkingv1.NetworkPolicyPeer, ns string, pod map[string]string) bool {
	if peer.IPBlock != nil {
		return true // an address block: any pod, as far as labels go
	}
	matches := func(sel *metav1.LabelSelector, set map[string]string) bool {
		s, err := metav1.LabelSelectorAsSelector(sel)
		return err == nil && s.Matches(labels.Set(set))
	}
	if peer.NamespaceSelector == nil {
		if ns != "chat" {
			return false
		}
	} else if !matches(peer.NamespaceSelector, map[string]string{"kubernetes.io/metadata.name": ns}) {
		return false
	}
	return peer.PodSelector == nil || matches(peer.PodSelector, pod)
}

// admits says whether any of rules lets the pod in on port.
func admits(np *networkingv1.NetworkPolicy, rules []networkingv1.NetworkPolicyIngressRule, port, ns string, pod map[string]string) bool {
	for _, r := range rules {
		if !slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port.String() == port }) {
			continue
		}
		if len(r.From) == 0 || slices.ContainsFunc(r.From, func(p networkingv1.NetworkPolicyPeer) bool { return peerSelects(np, p, ns, pod) }) {
			return true
		}
	}
	return false
}

// reaches says whether an egress rule naming peers (not only ports) lets
// the hub reach the pod.
func reaches(np *networkingv1.NetworkPolicy, ns string, pod map[string]string) bool {
	for _, r := range np.Spec.Egress {
		if len(r.To) > 0 && slices.ContainsFunc(r.To, func(p networkingv1.NetworkPolicyPeer) bool { return peerSelects(np, p, ns, pod) }) {
			return true
		}
	}
	return false
}

// valuesFile writes a values file of text for a render.
func valuesFile(t *testing.T, text string) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// A Redis without a password is said loudly at install (the default,
// redis://redis:6379, has none), and not when it has one (hardening V, 19).
func TestChart_SaysLoudlyWhenRedisHasNoPassword(t *testing.T) {
	for values, warned := range map[string]bool{
		"": true,
		"redis:\n  url: redis://redis.data:6379/0\n":                           true,
		"redis:\n  url: redis://:s3cret@redis.data:6379/0\n":                   false,
		"redis:\n  sentinel:\n    addresses: [s0:26379]\n":                     true,
		"redis:\n  sentinel:\n    addresses: [s0:26379]\n  password: s3cret\n": false,
		"redis:\n  cluster:\n    addresses: [c0:6379]\n  password: s3cret\n":   false,
		"redis:\n  existingSecret: my-redis\n":                                 false,
	} {
		var files []string
		if values != "" {
			files = append(files, valuesFile(t, values))
		}
		if got := strings.Contains(render(t, files...).Notes, "WITHOUT A PASSWORD"); got != warned {
			t.Errorf("values %q: warned %v, want %v", values, got, warned)
		}
	}
}
