// Package api adapts the hub to HTTP with Echo: routes, the JSON envelope and
// its error table, user and internal auth, the SSE writer, health and metrics.
package api
