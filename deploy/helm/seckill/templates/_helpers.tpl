{{/* Names and labels. */}}
{{- define "seckill.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "seckill.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "seckill.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Common labels; call with (dict "ctx" $ "component" "api"). */}}
{{- define "seckill.labels" -}}
helm.sh/chart: {{ include "seckill.chart" .ctx }}
{{ include "seckill.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Values.image.tag | default .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: seckill
{{- end }}

{{- define "seckill.selectorLabels" -}}
app.kubernetes.io/name: {{ include "seckill.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "seckill.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "seckill.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "seckill.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}

{{/*
An environment variable from an existing Secret; call with
(dict "ctx" $ "name" "DATABASE_URL" "ref" .Values.database.url).
*/}}
{{- define "seckill.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .ref.secretName | default .ctx.Values.secrets.name | required (printf "%s: set its secretName or secrets.name" .name) | quote }}
      key: {{ .ref.key | required (printf "%s: set the key of its Secret" .name) | quote }}
{{- end }}

{{/* A plain environment variable, omitted when the value is empty. */}}
{{- define "seckill.plainEnv" -}}
{{- if ne (toString (.value | default "")) "" }}
- name: {{ .name }}
  value: {{ .value | toString | quote }}
{{- end }}
{{- end }}

{{/* The checks that fail a render whose values cannot start seckill. */}}
{{- define "seckill.validate" -}}
{{- $a := .Values.auth }}
{{- if and $a.oidcIssuer $a.jwksURL }}
{{- fail "auth.oidcIssuer and auth.jwksURL are both set: set the issuer (keys by discovery) or the key set with auth.jwtIssuer, not both" }}
{{- end }}
{{- if and $a.jwksURL (not $a.jwtIssuer) }}
{{- fail "auth.jwksURL needs auth.jwtIssuer, the iss its tokens carry" }}
{{- end }}
{{- if not (has .Values.payments.provider (list "dev" "stripe")) }}
{{- fail (printf "payments.provider must be dev or stripe, got %q" .Values.payments.provider) }}
{{- end }}
{{- if and .Values.temporal.tls.enabled (not .Values.temporal.tls.secretName) }}
{{- fail "temporal.tls.enabled needs temporal.tls.secretName, the Secret with the client certificate, key and CA" }}
{{- end }}
{{- if and .Values.temporal.tls.enabled (not (or .Values.temporal.tls.certKey .Values.temporal.tls.caKey)) }}
{{- fail "temporal.tls.enabled: set temporal.tls.certKey and keyKey (client certificate) or caKey (the server's CA)" }}
{{- end }}
{{- if ne (not .Values.temporal.tls.certKey) (not .Values.temporal.tls.keyKey) }}
{{- fail "temporal.tls.certKey and temporal.tls.keyKey go together: a client certificate needs its key" }}
{{- end }}
{{- $queue := .Values.temporal.taskQueue | default "seckill-orders" | toString }}
{{- if eq $queue (.Values.temporal.drawTaskQueue | default "seckill-draws" | toString) }}
{{- fail (printf "temporal.drawTaskQueue must differ from temporal.taskQueue, both are %q: the draws run on a task queue of their own" $queue) }}
{{- end }}
{{- end }}

{{/*
The environment of a seckill container; call with
(dict "ctx" $ "component" "api" "values" .Values.api).
*/}}
{{- define "seckill.env" -}}
{{- $v := .ctx.Values }}
{{- include "seckill.validate" .ctx }}
{{- include "seckill.secretEnv" (dict "ctx" .ctx "name" "DATABASE_URL" "ref" $v.database.url) }}
{{ include "seckill.secretEnv" (dict "ctx" .ctx "name" "REDIS_URL" "ref" $v.redis.url) }}
{{- include "seckill.plainEnv" (dict "name" "SECKILL_REDIS_PREFIX" "value" $v.redis.prefix) }}
{{- include "seckill.plainEnv" (dict "name" "TEMPORAL_ADDRESS" "value" $v.temporal.address) }}
{{- include "seckill.plainEnv" (dict "name" "TEMPORAL_NAMESPACE" "value" $v.temporal.namespace) }}
{{- include "seckill.plainEnv" (dict "name" "TEMPORAL_TASK_QUEUE" "value" $v.temporal.taskQueue) }}
{{- include "seckill.plainEnv" (dict "name" "TEMPORAL_DRAW_TASK_QUEUE" "value" $v.temporal.drawTaskQueue) }}
{{- with $v.temporal.tls }}
{{- if .enabled }}
{{- if .certKey }}
- name: TEMPORAL_TLS_CERT
  value: {{ printf "%s/tls.crt" .mountPath | quote }}
- name: TEMPORAL_TLS_KEY
  value: {{ printf "%s/tls.key" .mountPath | quote }}
{{- end }}
{{- if .caKey }}
- name: TEMPORAL_TLS_CA
  value: {{ printf "%s/ca.crt" .mountPath | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- include "seckill.plainEnv" (dict "name" "TEMPORAL_TLS_SERVER_NAME" "value" $v.temporal.serverName) }}
{{- if $v.temporal.apiKey.enabled }}
{{ include "seckill.secretEnv" (dict "ctx" .ctx "name" "TEMPORAL_API_KEY" "ref" $v.temporal.apiKey) }}
{{- end }}
{{- if not (or $v.auth.oidcIssuer $v.auth.jwksURL) }}
{{ include "seckill.secretEnv" (dict "ctx" .ctx "name" "SECKILL_JWT_SECRET" "ref" $v.auth.jwtSecret) }}
{{- end }}
{{- include "seckill.plainEnv" (dict "name" "SECKILL_OIDC_ISSUER" "value" $v.auth.oidcIssuer) }}
{{- include "seckill.plainEnv" (dict "name" "SECKILL_JWKS_URL" "value" $v.auth.jwksURL) }}
{{- include "seckill.plainEnv" (dict "name" "SECKILL_JWT_ISSUER" "value" $v.auth.jwtIssuer) }}
{{- include "seckill.plainEnv" (dict "name" "SECKILL_JWT_AUDIENCE" "value" $v.auth.jwtAudience) }}
{{- include "seckill.plainEnv" (dict "name" "SECKILL_ADMIN_CLAIM" "value" $v.auth.adminClaim) }}
{{ include "seckill.secretEnv" (dict "ctx" .ctx "name" "SECKILL_WEBHOOK_SECRET" "ref" $v.webhook.secret) }}
- name: SECKILL_PAYMENT_PROVIDER
  value: {{ $v.payments.provider | quote }}
{{- if eq $v.payments.provider "stripe" }}
{{ include "seckill.secretEnv" (dict "ctx" .ctx "name" "STRIPE_SECRET_KEY" "ref" $v.payments.stripe.secretKey) }}
{{- include "seckill.plainEnv" (dict "name" "STRIPE_API_BASE" "value" $v.payments.stripe.apiBase) }}
{{- end }}
{{- if $v.events.enabled }}
{{ include "seckill.secretEnv" (dict "ctx" .ctx "name" "SECKILL_EVENTS_URL" "ref" $v.events.url) }}
{{ include "seckill.secretEnv" (dict "ctx" .ctx "name" "SECKILL_EVENTS_SECRET" "ref" $v.events.secret) }}
{{- end }}
{{- if $v.otel.endpoint }}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ $v.otel.endpoint | quote }}
{{- include "seckill.plainEnv" (dict "name" "OTEL_EXPORTER_OTLP_PROTOCOL" "value" $v.otel.protocol) }}
{{- include "seckill.plainEnv" (dict "name" "OTEL_TRACES_SAMPLER" "value" $v.otel.tracesSampler) }}
{{- include "seckill.plainEnv" (dict "name" "OTEL_TRACES_SAMPLER_ARG" "value" $v.otel.tracesSamplerArg) }}
{{- include "seckill.plainEnv" (dict "name" "OTEL_SERVICE_NAME" "value" $v.otel.serviceName) }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ list "k8s.namespace.name=$(POD_NAMESPACE)" "k8s.pod.name=$(POD_NAME)" | concat (compact (list $v.otel.resourceAttributes)) | join "," | quote }}
{{- if $v.otel.headers.enabled }}
{{ include "seckill.secretEnv" (dict "ctx" .ctx "name" "OTEL_EXPORTER_OTLP_HEADERS" "ref" $v.otel.headers) }}
{{- end }}
{{- end }}
{{- range $name, $value := $v.env }}
{{- if not (hasKey ($.values.env | default dict) $name) }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}
{{- range $name, $value := (.values.env | default dict) }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- with $v.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- with .values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The Temporal TLS volume and its mount (when temporal.tls.enabled). */}}
{{- define "seckill.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- with .Values.temporal.tls }}
{{- if .enabled }}
- name: temporal-tls
  projected:
    defaultMode: 0440
    sources:
      {{- if .certKey }}
      - secret:
          name: {{ .secretName | quote }}
          items:
            - key: {{ .certKey | quote }}
              path: tls.crt
            - key: {{ .keyKey | quote }}
              path: tls.key
      {{- end }}
      {{- if .caKey }}
      - secret:
          name: {{ .caSecretName | default .secretName | quote }}
          items:
            - key: {{ .caKey | quote }}
              path: ca.crt
      {{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- define "seckill.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .Values.temporal.tls.enabled }}
- name: temporal-tls
  mountPath: {{ .Values.temporal.tls.mountPath | quote }}
  readOnly: true
{{- end }}
{{- end }}

{{/*
Pod scheduling and security shared by every pod; call with
(dict "ctx" $ "values" .Values.api); the component's own nodeSelector,
tolerations, affinity replace the chart-wide ones.
*/}}
{{- define "seckill.podScheduling" -}}
{{- $v := .ctx.Values }}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
automountServiceAccountToken: {{ $v.serviceAccount.automountServiceAccountToken }}
{{- with $v.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with $v.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.values.nodeSelector | default $v.nodeSelector) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.values.tolerations | default $v.tolerations) }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.values.affinity | default $v.affinity) }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  {{- include "seckill.volumes" .ctx | nindent 2 }}
{{- end }}

{{/* Pod annotations: chart-wide, then the component's. */}}
{{- define "seckill.podAnnotations" -}}
{{- $a := merge (dict) (.values.podAnnotations | default dict) (.ctx.Values.podAnnotations | default dict) }}
{{- with $a }}
annotations:
  {{- include "seckill.stringMap" . | trim | nindent 2 }}
{{- end }}
{{- end }}

{{/* Pod labels: selector labels, chart-wide and the component's extra ones. */}}
{{- define "seckill.podLabels" -}}
labels:
  {{- include "seckill.labels" (dict "ctx" .ctx "component" .component) | nindent 2 }}
  {{- with merge (dict) (.values.podLabels | default dict) (.ctx.Values.podLabels | default dict) }}
  {{- include "seckill.stringMap" . | trim | nindent 2 }}
  {{- end }}
{{- end }}

{{/* The PodDisruptionBudget spec's budget. */}}
{{- define "seckill.pdbBudget" -}}
{{- $max := .maxUnavailable }}
{{- $min := .minAvailable }}
{{- if and (not (kindIs "invalid" $max)) (ne (toString $max) "") }}
maxUnavailable: {{ $max }}
{{- else if and (not (kindIs "invalid" $min)) (ne (toString $min) "") }}
minAvailable: {{ $min }}
{{- else }}
minAvailable: 1
{{- end }}
{{- end }}

{{/* A preStop hook that waits, when seconds > 0. */}}
{{- define "seckill.lifecycle" -}}
{{- if gt (int .) 0 }}
lifecycle:
  preStop:
    sleep:
      seconds: {{ int . }}
{{- end }}
{{- end }}

{{/* A map of strings (labels, annotations): every value quoted, so 1 or true stay strings. */}}
{{- define "seckill.stringMap" -}}
{{- range $k, $v := . }}
{{ $k }}: {{ $v | toString | quote }}
{{- end }}
{{- end }}
