package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
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
