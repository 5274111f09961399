{{/* Names, labels and the rendered router config shared by the templates. */}}

{{- define "cacheroute.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "cacheroute.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "cacheroute.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "cacheroute.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "cacheroute.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cacheroute.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The router pods (the chart's NATS pods carry component nats instead). */}}
{{- define "cacheroute.routerSelectorLabels" -}}
{{ include "cacheroute.selectorLabels" . }}
app.kubernetes.io/component: router
{{- end -}}

{{- define "cacheroute.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "cacheroute.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "cacheroute.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "cacheroute.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "cacheroute.natsName" -}}
{{- printf "%s-nats" (include "cacheroute.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The namespaces the discovery sources read (the RBAC is granted in each). */}}
{{- define "cacheroute.discoveryNamespaces" -}}
{{- $out := list -}}
{{- range .Values.router.discovery.sources -}}
{{- $out = append $out (default $.Release.Namespace .namespace) -}}
{{- end -}}
{{- $out | uniq | toJson -}}
{{- end -}}

{{/*
The router config (router.yaml) rendered from .Values.router. It refuses combinations the router
would accept but that break in a cluster: several replicas completing from one access log without
completion forwarding, and replication without a NATS to reach.
*/}}
{{- define "cacheroute.routerConfig" -}}
{{- $r := .Values.router -}}
{{- $server := dict "grpcAddress" (printf "0.0.0.0:%v" $r.grpcPort) "adminAddress" (printf "0.0.0.0:%v" $r.adminPort) "responseCompletion" $r.responseCompletion -}}
{{- $cfg := dict "apiVersion" "cacheroute/v1" "server" $server "fallbacks" $r.fallbacks -}}
{{- if or $r.plugins $r.schedulingProfiles -}}
{{- if not (and $r.plugins $r.schedulingProfiles) -}}
{{- fail "router.plugins and router.schedulingProfiles go together (an explicit plugin graph needs both)" -}}
{{- end -}}
{{- $_ := set $cfg "plugins" $r.plugins -}}
{{- $_ := set $cfg "schedulingProfiles" $r.schedulingProfiles -}}
{{- else -}}
{{- $_ := set $cfg "strategy" $r.strategy -}}
{{- end -}}
{{- if $r.endpoints -}}
{{- $_ := set $cfg "endpoints" $r.endpoints -}}
{{- end -}}
{{- $sources := list -}}
{{- range $r.discovery.sources -}}
{{- $s := deepCopy . -}}
{{- if and (has .type (list "kubernetes" "inference-pool")) (not .namespace) -}}
{{- $_ := set $s "namespace" $.Release.Namespace -}}
{{- end -}}
{{- $sources = append $sources $s -}}
{{- end -}}
{{- if not (or $sources $r.endpoints) -}}
{{- fail "router.discovery.sources or router.endpoints must name at least one engine source" -}}
{{- end -}}
{{- if $sources -}}
{{- $_ := set $cfg "discovery" (dict "sources" $sources) -}}
{{- end -}}
{{- $_ := set $cfg "engineMetrics" (dict "enabled" $r.engineMetrics) -}}
{{- $_ := set $cfg "telemetry" (dict "logLevel" $r.logLevel "decisionHeader" false "recentDecisions" $r.recentDecisions) -}}
{{- $rep := $r.replication -}}
{{- if $rep.enabled -}}
{{- $servers := $rep.servers -}}
{{- if not $servers -}}
{{- if not .Values.nats.enabled -}}
{{- fail "router.replication.enabled needs router.replication.servers or nats.enabled" -}}
{{- end -}}
{{- $servers = list (printf "nats://%s.%s.svc.cluster.local:4222" (include "cacheroute.natsName" .) .Release.Namespace) -}}
{{- end -}}
{{- $_ := set $cfg "replication" (dict "enabled" true "servers" $servers "load" $rep.load "completions" $rep.completions "index" $rep.index) -}}
{{- end -}}
{{- if and (gt (int .Values.replicaCount) 1) (eq $r.responseCompletion "access-log") (not (and $rep.enabled $rep.completions.enabled)) -}}
{{- fail "replicaCount > 1 with responseCompletion access-log needs router.replication.enabled and router.replication.completions.enabled: the access log reaches one replica" -}}
{{- end -}}
{{- $cfg = mergeOverwrite $cfg (deepCopy $r.extraConfig) -}}
{{- toYaml $cfg -}}
{{- end -}}
