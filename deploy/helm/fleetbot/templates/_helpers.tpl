{{- define "fleetbot.name" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "fleetbot.labels" -}}
app.kubernetes.io/name: fleetbot
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "fleetbot.selector" -}}
app.kubernetes.io/name: fleetbot
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
