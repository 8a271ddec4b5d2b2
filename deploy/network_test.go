package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

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
		// The console, on in these values: its pages and its own door.
		"/console/": true, "/console/users/8": true, "/console/api/overview": true, "/api/v1/internal/overview": false,
	} {
		if got := takes(url); got != want {
			t.Errorf("the ingress routes %s: %v, want %v", url, got, want)
		}
	}
	for _, p := range render(t, valuesWriter(t)("ingress.yaml", "ingress:\n  enabled: true\n")).Ingress.Spec.Rules[0].HTTP.Paths {
		if routed(t, p, "/console/") {
			t.Error("the ingress carries /console with the console off")
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
