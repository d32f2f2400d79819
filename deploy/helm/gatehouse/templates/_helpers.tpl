{{/*
Names, labels, the configuration file and the checks that refuse a render.
The pod's wiring (ports, paths, user) is the kustomize base's in deploy/.
*/}}

{{- define "gatehouse.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 55 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 55 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 55 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gatehouse.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gatehouse.labels" -}}
{{ include "gatehouse.selectorLabels" . }}
app.kubernetes.io/version: {{ include "gatehouse.imageTag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "gatehouse.imageTag" -}}
{{- .Values.image.tag | default .Chart.AppVersion -}}
{{- end -}}

{{/* Where the pod keeps its files; the same paths as the kustomize base. */}}
{{- define "gatehouse.configDir" -}}/etc/gatehouse/config{{- end -}}
{{- define "gatehouse.secretsDir" -}}/etc/gatehouse/secrets{{- end -}}
{{- define "gatehouse.dataDir" -}}/var/lib/gatehouse{{- end -}}
{{- define "gatehouse.mailDir" -}}/var/spool/gatehouse{{- end -}}

{{/* PostgreSQL when secrets.db names a Secret, else bbolt on a claim. */}}
{{- define "gatehouse.postgres" -}}
{{- if .Values.secrets.db.secretName }}true{{ end -}}
{{- end -}}

{{/* The base URL: baseURL, else the Ingress's host, else none (Gatehouse's default). */}}
{{- define "gatehouse.baseURL" -}}
{{- if .Values.baseURL -}}
{{- .Values.baseURL -}}
{{- else if and .Values.ingress.enabled .Values.ingress.host -}}
{{- ternary "https" "http" (ne .Values.ingress.tlsSecretName "") }}://{{ .Values.ingress.host -}}
{{- end -}}
{{- end -}}

{{/* The configuration file: config, plus upstream, base-url and the allowed emails' file. */}}
{{- define "gatehouse.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- $_ := set $config "upstream" .Values.upstream -}}
{{- with include "gatehouse.baseURL" . -}}
{{- $_ := set $config "base-url" . -}}
{{- end -}}
{{- if .Values.allowedEmails -}}
{{- $_ := set $config "allow-emails-file" (printf "%s/allowed-emails" (include "gatehouse.configDir" .)) -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}

{{/*
The keys Gatehouse puts in force from a changed file without a restart
(routes, public-path and the allow-* rules; see "Configuration file" in the
README). A change to any other key rolls the pods, through this checksum in
their annotations.
*/}}
{{- define "gatehouse.restartChecksum" -}}
{{- $config := fromYaml (include "gatehouse.config" .) -}}
{{- $restart := omit $config "routes" "public-path" "allow-email-domain" "allow-emails-file" "allow-group" -}}
{{- toYaml $restart | sha256sum -}}
{{- end -}}

{{/* The secrets in use, as {flag: {secretName, key}}, in a stable order. */}}
{{- define "gatehouse.secretFiles" -}}
{{- $out := dict -}}
{{- range $flag, $ref := .Values.secrets -}}
{{- if $ref.secretName -}}
{{- $_ := set $out $flag $ref -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
Refusals: a render that would give a broken or unsafe release fails here,
naming the value to change.
*/}}
{{- define "gatehouse.validate" -}}
{{- $upstream := required "upstream is required: the URL of the Service Gatehouse protects, e.g. --set upstream=http://my-app.my-namespace.svc.cluster.local:8080" .Values.upstream -}}
{{- if and (gt (int .Values.replicaCount) 1) (not (include "gatehouse.postgres" .)) -}}
{{- fail (printf "replicaCount is %d, but bbolt allows one process per database file: several replicas need PostgreSQL, set secrets.db.secretName to a Secret holding its postgres:// URL (or replicaCount to 1)" (int .Values.replicaCount)) -}}
{{- end -}}
{{- if .Values.app.image -}}
{{- $loopback := printf "http://127.0.0.1:%d" (int .Values.app.port) -}}
{{- if ne (trimSuffix "/" $upstream) $loopback -}}
{{- fail (printf "upstream is %s, but with app.image the app runs in Gatehouse's pod: set upstream to %s (app.port %d)" $upstream $loopback (int .Values.app.port)) -}}
{{- end -}}
{{- if .Values.networkPolicy.upstreamPodLabels -}}
{{- fail "networkPolicy.upstreamPodLabels selects the upstream's own pods, but with app.image the app is in Gatehouse's pod, which the chart's NetworkPolicy already covers: leave networkPolicy.upstreamPodLabels empty" -}}
{{- end -}}
{{- end -}}
{{- if and (not .Values.networkPolicy.enabled) (index .Values.config "trusted-proxies") -}}
{{- fail "config.trusted-proxies is set while networkPolicy.enabled is false: every pod that can reach the proxy port could then pick its own client IP (X-Forwarded-For); keep the NetworkPolicy, or set config.trusted-proxies to []" -}}
{{- end -}}
{{- if and .Values.ingress.tlsSecretName (not .Values.ingress.host) -}}
{{- fail "ingress.tlsSecretName needs ingress.host: a TLS certificate is for a host name" -}}
{{- end -}}
{{- end -}}

{{/* The restricted Pod Security Standard, for every container. */}}
{{- define "gatehouse.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}
