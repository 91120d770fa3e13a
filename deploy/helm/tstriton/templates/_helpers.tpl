{{/* Name of the chart, or nameOverride. */}}
{{- define "tstriton.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name of the release's objects: fullnameOverride, or <release>-<name> (the release alone when it already
contains the name). */}}
{{- define "tstriton.fullname" -}}
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

{{- define "tstriton.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "tstriton.labels" -}}
helm.sh/chart: {{ include "tstriton.chart" . }}
{{ include "tstriton.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: inference-server
{{- end }}

{{/* Labels that select the pods. */}}
{{- define "tstriton.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tstriton.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "tstriton.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tstriton.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Server image: repository:tag, the tag defaulting to appVersion, with the GPU variant's suffix when gpu.enabled. */}}
{{- define "tstriton.image" -}}
{{- $tag := default .Chart.AppVersion (toString .Values.image.tag) }}
{{- if .Values.gpu.enabled }}{{ $tag = printf "%s%s" $tag .Values.gpu.imageTagSuffix }}{{ end }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}

{{/* Grace period: terminationGracePeriodSeconds, or exitTimeoutSeconds + preStopSleepSeconds + the margin. */}}
{{- define "tstriton.gracePeriod" -}}
{{- $exit := int .Values.exitTimeoutSeconds }}
{{- $sleep := int .Values.preStopSleepSeconds }}
{{- if eq (toString .Values.terminationGracePeriodSeconds) "" }}
{{- add $exit $sleep (int .Values.terminationGraceMarginSeconds) }}
{{- else }}
{{- int .Values.terminationGracePeriodSeconds }}
{{- end }}
{{- end }}

{{/* HTTP or HTTPS, for the probes. */}}
{{- define "tstriton.probeScheme" -}}
{{- if .Values.tls.http.enabled }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/* Name of the ConfigMap of the model repository. */}}
{{- define "tstriton.modelsConfigMap" -}}
{{- default (printf "%s-models" (include "tstriton.fullname" .)) .Values.modelRepository.configMap.name }}
{{- end }}

{{/* A ConfigMap key for a repository path ("a/1/model.js" -> "a_1_model.js"; "/" cannot be in a key). */}}
{{- define "tstriton.configMapKey" -}}
{{- regexReplaceAll "[^-._a-zA-Z0-9]" . "_" }}
{{- end }}

{{/* Refuses values that would deploy a server Kubernetes kills, cannot probe, or cannot start. */}}
{{- define "tstriton.validate" -}}
{{- $v := .Values -}}
{{- $exit := int $v.exitTimeoutSeconds }}
{{- $sleep := int $v.preStopSleepSeconds }}
{{- if lt $exit 0 }}
{{- fail (printf "exitTimeoutSeconds must be 0 or more, not %d" $exit) }}
{{- end }}
{{- $grace := int (include "tstriton.gracePeriod" .) }}
{{- $least := add $exit $sleep 5 }}
{{- if lt $grace $least }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be at least exitTimeoutSeconds (%d) + preStopSleepSeconds (%d) + 5 s for the server to close its connections = %d: Kubernetes would kill the server with SIGKILL while it drains in-flight requests. Raise terminationGracePeriodSeconds, or leave it empty for exitTimeoutSeconds + preStopSleepSeconds + terminationGraceMarginSeconds." $grace $exit $sleep $least) }}
{{- end }}
{{- $source := $v.modelRepository.source }}
{{- if not (has $source (list "image" "pvc" "configMap")) }}
{{- fail (printf "modelRepository.source must be image, pvc or configMap, not %q" (toString $source)) }}
{{- end }}
{{- if and (eq $source "image") $v.modelRepository.image.repository }}
{{- if not (has $v.modelRepository.image.mode (list "initContainer" "volume")) }}
{{- fail (printf "modelRepository.image.mode must be initContainer or volume, not %q" (toString $v.modelRepository.image.mode)) }}
{{- end }}
{{- if and (eq $v.modelRepository.image.mode "volume") (not (semverCompare ">=1.33.0-0" .Capabilities.KubeVersion.Version)) }}
{{- fail (printf "modelRepository.image.mode volume needs image volumes with subPath (Kubernetes 1.33 or later; this cluster is %s): use mode initContainer" .Capabilities.KubeVersion.Version) }}
{{- end }}
{{- end }}
{{- if and (eq $source "pvc") (not $v.modelRepository.pvc.claimName) }}
{{- fail "modelRepository.source pvc needs modelRepository.pvc.claimName, the PersistentVolumeClaim that holds the repository" }}
{{- end }}
{{- if eq $source "configMap" }}
{{- if and $v.modelRepository.configMap.name $v.modelRepository.configMap.files }}
{{- fail "modelRepository.configMap: set name (an existing ConfigMap, with items) or files (a ConfigMap the chart creates), not both" }}
{{- end }}
{{- if and (not $v.modelRepository.configMap.name) (not $v.modelRepository.configMap.files) }}
{{- fail "modelRepository.source configMap needs modelRepository.configMap.name (an existing ConfigMap, with items) or modelRepository.configMap.files" }}
{{- end }}
{{- end }}
{{- if and (or $v.tls.http.enabled $v.tls.grpc.enabled) (not $v.tls.secretName) }}
{{- fail "tls.http.enabled / tls.grpc.enabled need tls.secretName, a kubernetes.io/tls Secret (tls.crt, tls.key, and ca.crt for mutual TLS)" }}
{{- end }}
{{- if not (has (toString $v.gpu.executionProvider) (list "" "auto" "cuda" "webgpu")) }}
{{- fail (printf "gpu.executionProvider must be auto, cuda or webgpu (or empty), not %q" (toString $v.gpu.executionProvider)) }}
{{- end }}
{{- if and $v.tls.http.mutual (not $v.tls.http.enabled) }}
{{- fail "tls.http.mutual needs tls.http.enabled" }}
{{- end }}
{{- if and $v.tls.grpc.mutual (not $v.tls.grpc.enabled) }}
{{- fail "tls.grpc.mutual needs tls.grpc.enabled" }}
{{- end }}
{{- if $v.tls.http.mutual }}
{{- fail "tls.http.mutual: the kubelet's HTTPS probes cannot present a client certificate, so the pod would never be ready; use mutual TLS on gRPC (tls.grpc.mutual) and keep HTTP TLS one-way" }}
{{- end }}
{{- if $v.apiKey.secretName }}
{{- if has "health" $v.apiKey.httpApis }}
{{- fail "apiKey.httpApis must not contain health: the kubelet's probes (GET /v2/health/live and /v2/health/ready) do not send the key" }}
{{- end }}
{{- if not (regexMatch "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" $v.apiKey.header) }}
{{- fail (printf "apiKey.header %q is not a valid HTTP header name" $v.apiKey.header) }}
{{- end }}
{{- if and (not $v.apiKey.httpApis) (not $v.apiKey.grpcProtocols) }}
{{- fail "apiKey.secretName is set but apiKey.httpApis and apiKey.grpcProtocols are both empty: nothing would be restricted" }}
{{- end }}
{{- end }}
{{- if and $v.autoscaling.enabled (not $v.autoscaling.queueMetric.enabled) (not $v.autoscaling.targetCPUUtilizationPercentage) (not $v.autoscaling.extraMetrics) }}
{{- fail "autoscaling.enabled needs a metric: targetCPUUtilizationPercentage, queueMetric.enabled or extraMetrics" }}
{{- end }}
{{- if and $v.podDisruptionBudget.enabled (not (has (toString $v.podDisruptionBudget.minAvailable) (list "" "<nil>"))) (not (has (toString $v.podDisruptionBudget.maxUnavailable) (list "" "<nil>"))) }}
{{- fail "podDisruptionBudget: set minAvailable or maxUnavailable, not both" }}
{{- end }}
{{- if and $v.podDisruptionBudget.enabled (has (toString $v.podDisruptionBudget.minAvailable) (list "" "<nil>")) (has (toString $v.podDisruptionBudget.maxUnavailable) (list "" "<nil>")) }}
{{- fail "podDisruptionBudget.enabled needs minAvailable or maxUnavailable" }}
{{- end }}
{{- end }}

{{/* Arguments of the server: serve, the repository, the exit timeout, the ports, TLS, restricted APIs, extraArgs. */}}
{{- define "tstriton.args" -}}
{{- $v := .Values -}}
- "serve"
- "--model-repository={{ $v.modelRepository.mountPath }}"
- "--exit-timeout-secs={{ int $v.exitTimeoutSeconds }}"
- "--http-port={{ int $v.ports.http }}"
- "--grpc-port={{ int $v.ports.grpc }}"
- "--metrics-port={{ int $v.ports.metrics }}"
{{- $tls := $v.tls.mountPath }}
{{- if $v.tls.http.enabled }}
- "--http-use-ssl=true"
- "--http-server-cert={{ $tls }}/tls.crt"
- "--http-server-key={{ $tls }}/tls.key"
{{- end }}
{{- if $v.tls.grpc.enabled }}
- "--grpc-use-ssl=true"
- "--grpc-server-cert={{ $tls }}/tls.crt"
- "--grpc-server-key={{ $tls }}/tls.key"
{{- if $v.tls.grpc.mutual }}
- "--grpc-use-ssl-mutual=true"
- "--grpc-root-cert={{ $tls }}/ca.crt"
{{- end }}
{{- end }}
{{- if $v.apiKey.secretName }}
{{- if $v.apiKey.httpApis }}
- {{ printf "--http-restricted-api=%s:%s=$(RESTRICTED_API_KEY)" (join "," $v.apiKey.httpApis) $v.apiKey.header | quote }}
{{- end }}
{{- if $v.apiKey.grpcProtocols }}
- {{ printf "--grpc-restricted-protocol=%s:%s=$(RESTRICTED_API_KEY)" (join "," $v.apiKey.grpcProtocols) $v.apiKey.header | quote }}
{{- end }}
{{- end }}
{{- with $v.gpu.executionProvider }}
- "--gpu-execution-provider={{ . }}"
{{- end }}
{{- range $v.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}
