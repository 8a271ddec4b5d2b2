{{/* The release's name for its objects, at most 63 characters. */}}
{{- define "roomhub.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "roomhub.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "roomhub.labels" -}}
{{ include "roomhub.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret holding JWT_SECRET, INTERNAL_API_KEY and the VAPID key. */}}
{{- define "roomhub.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "roomhub.fullname" .) -}}
{{- end -}}

{{/* REDIS_URL from sentinel, else cluster, else url (existingSecret, when set, holds it instead). */}}
{{- define "roomhub.redisURL" -}}
{{- $r := .Values.redis -}}
{{- $auth := "" -}}
{{- if $r.password }}{{ $auth = printf ":%s@" ($r.password | urlquery) }}{{ end -}}
{{- if $r.sentinel.addresses -}}
{{- printf "redis+sentinel://%s%s/%s" $auth (join "," $r.sentinel.addresses) $r.sentinel.masterName -}}
{{- else if $r.cluster.addresses -}}
{{- printf "redis+cluster://%s%s" $auth (join "," $r.cluster.addresses) -}}
{{- else -}}
{{- $r.url | default "redis://redis:6379" -}}
{{- end -}}
{{- end -}}

{{/* Fails on a Redis setting that names two Redis. */}}
{{- define "roomhub.checkRedis" -}}
{{- $r := .Values.redis -}}
{{- $given := 0 -}}
{{- range (list $r.url $r.sentinel.addresses $r.cluster.addresses $r.existingSecret) }}{{ if . }}{{ $given = add1 $given }}{{ end }}{{ end -}}
{{- if gt $given 1 -}}
{{- fail "redis: set one of redis.url, redis.sentinel.addresses, redis.cluster.addresses and redis.existingSecret, not several (Sentinel would win silently)" -}}
{{- end -}}
{{- end -}}

{{/*
Fails on a channel the hub sends itself turned on (config.DELIVERY_CHANNELS)
without its keys, naming the value: the pod would stop at start-up. Keys
held in secrets.existingSecret are the operator's to check.
*/}}
{{- define "roomhub.checkConfig" -}}
{{- $own := dict "REDIS_URL" "redis.url (or redis.sentinel, redis.cluster, redis.existingSecret)" "JWT_SECRET" "secrets.jwtSecret (or secrets.existingSecret)" "INTERNAL_API_KEY" "secrets.internalApiKey (or secrets.existingSecret)" "WEBPUSH_VAPID_PRIVATE_KEY" "secrets.webpushVapidPrivateKey" "FCM_CREDENTIALS" "secrets.fcmCredentials" "APNS_PRIVATE_KEY" "secrets.apnsPrivateKey" "CONSOLE_PASSWORD" "console.enabled and secrets.consolePassword" "SERVER_PORT" "service.port (the container's port is the chart's)" "METRICS_ADDR" "metrics.port" -}}
{{- range $k, $v := .Values.config }}
{{- if hasKey $own $k }}
{{- fail (printf "config.%s is the chart's to set: use %s" $k (get $own $k)) -}}
{{- end }}
{{- end }}
{{- end -}}

{{- define "roomhub.checkChannels" -}}
{{- $c := .Values.config -}}
{{- $s := .Values.secrets -}}
{{- $channels := splitList "," (toString (get $c "DELIVERY_CHANNELS")) -}}
{{- $need := dict "webpush" (list "config.WEBPUSH_VAPID_PUBLIC_KEY" "config.WEBPUSH_SUBJECT" "secrets.webpushVapidPrivateKey") "fcm" (list "secrets.fcmCredentials") "apns" (list "config.APNS_KEY_ID" "config.APNS_TEAM_ID" "config.APNS_TOPIC" "secrets.apnsPrivateKey") -}}
{{- range $ch := $channels }}
{{- range $v := (get $need (trim $ch)) | default (list) }}
{{- $parts := splitList "." $v -}}
{{- $from := ternary $c $s (eq (first $parts) "config") -}}
{{- if and (not (get $from (last $parts))) (or (eq (first $parts) "config") (not $s.existingSecret)) }}
{{- fail (printf "config.DELIVERY_CHANNELS lists %s: set %s (docs/delivery.md says where it comes from)" (trim $ch) $v) -}}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
A NetworkPolicy peer: pods matching podSelector in the namespaces matching
namespaceSelector; with no namespaceSelector (null, unset), in the release's
namespace alone. (Kubernetes reads namespaceSelector: {} as every namespace.)
*/}}
{{- define "roomhub.peer" -}}
- podSelector: {{ toJson (.podSelector | default dict) }}
{{- if kindIs "map" .namespaceSelector }}
  namespaceSelector: {{ toJson .namespaceSelector }}
{{- end }}
{{- end }}
