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
{{- $r.url -}}
{{- end -}}
{{- end -}}

{{/* Fails on a Redis setting that names two Redis, or none. */}}
{{- define "roomhub.checkRedis" -}}
{{- $r := .Values.redis -}}
{{- if and $r.sentinel.addresses $r.cluster.addresses -}}
{{- fail "redis: set redis.sentinel.addresses or redis.cluster.addresses, not both" -}}
{{- end -}}
{{- if not (or $r.existingSecret $r.url $r.sentinel.addresses $r.cluster.addresses) -}}
{{- fail "redis: set redis.url, redis.sentinel.addresses, redis.cluster.addresses or redis.existingSecret" -}}
{{- end -}}
{{- end -}}
