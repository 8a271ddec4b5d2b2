// Package deploy checks the Kubernetes deployment of roomhub (the Helm chart
// in helm/roomhub and the Prometheus adapter's rule) by linting and
// rendering it with Helm's own packages and decoding every object strictly
// into the Kubernetes API types. It is a module of its own, so that Helm and
// the Kubernetes client libraries stay out of the hub's build.
package deploy
