{{/* The name of the site's objects: the release's, with the chart's after it unless it holds it. */}}
{{- define "syncloop.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "syncloop.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "syncloop.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: site
{{- end -}}

{{- define "syncloop.relaySelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: relay
{{- end -}}

{{/* The Secret holding the relay token, and its key. */}}
{{- define "syncloop.tokenSecret" -}}
{{- .Values.token.existingSecret | default (printf "%s-token" (include "syncloop.fullname" .)) -}}
{{- end -}}

{{/*
The token the chart's Secrets hold: token.value, else the one a previous
release stored, else a random one; made once per render (both Secrets,
the site's and the relay's, hold the same).
*/}}
{{- define "syncloop.token" -}}
{{- if not (hasKey .Values.token "resolved") -}}
{{- $v := .Values.token.value -}}
{{- if not $v -}}
{{- $s := lookup "v1" "Secret" .Release.Namespace (include "syncloop.tokenSecret" .) -}}
{{- if and $s $s.data (hasKey $s.data .Values.token.key) -}}
{{- $v = index $s.data .Values.token.key | b64dec -}}
{{- end -}}
{{- end -}}
{{- $_ := set .Values.token "resolved" ($v | default (randAlphaNum 40)) -}}
{{- end -}}
{{- .Values.token.resolved -}}
{{- end -}}

{{- define "syncloop.image" -}}
{{- printf "%s:%s" .repository (.tag | default $.appVersion) -}}
{{- end -}}
