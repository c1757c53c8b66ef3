{{/* The chart's names, labels and checks, shared by its templates. */}}

{{/* waitroom.name is the chart's name, or nameOverride. */}}
{{- define "waitroom.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* waitroom.fullname names the release's resources: the release name, with the chart's unless it holds it. */}}
{{- define "waitroom.fullname" -}}
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

{{/* waitroom.selectorLabels pick the release's pods. */}}
{{- define "waitroom.selectorLabels" -}}
app.kubernetes.io/name: {{ include "waitroom.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* waitroom.labels go on every resource. */}}
{{- define "waitroom.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "waitroom.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* waitroom.secretName is the Secret the pods read their keys from: existingSecret, or the chart's. */}}
{{- define "waitroom.secretName" -}}
{{- default (include "waitroom.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* waitroom.image is repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "waitroom.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* waitroom.check fails the rendering on values the server would refuse or a drain could not fit. */}}
{{- define "waitroom.check" -}}
{{- if not .Values.redis.addr }}
{{- fail "redis.addr is required: every instance must share one Redis" }}
{{- end }}
{{- if and (not .Values.secrets.existingSecret) (not .Values.secrets.databaseURL) }}
{{- fail "secrets.databaseURL (or secrets.existingSecret) is required: every instance must share one PostgreSQL" }}
{{- end }}
{{- if and .Values.secrets.adminKey (lt (len .Values.secrets.adminKey) 16) }}
{{- fail "secrets.adminKey must be at least 16 characters" }}
{{- end }}
{{- if and .Values.secrets.passSecret (lt (len .Values.secrets.passSecret) 32) }}
{{- fail "secrets.passSecret must be at least 32 characters" }}
{{- end }}
{{- if not (has .Values.booking.checkout (list "instant" "hold")) }}
{{- fail "booking.checkout must be instant or hold" }}
{{- end }}
{{- with .Values.booking.checkoutUrl }}
{{- if not (and (contains "{code}" .) (or (hasPrefix "https://" .) (hasPrefix "http://" .))) }}
{{- fail "booking.checkoutUrl must be an http(s) URL with {code} in it (https://shop.example/pay?order={code})" }}
{{- end }}
{{- end }}
{{- if eq .Values.booking.checkout "hold" }}
{{- if not .Values.booking.checkoutUrl }}
{{- fail "booking.checkout hold needs booking.checkoutUrl: without it buyers get the server's demo checkout, whose Pay button confirms without payment" }}
{{- end }}
{{- if and (not .Values.secrets.confirmKey) (not .Values.secrets.existingSecret) }}
{{- fail "booking.checkout hold needs secrets.confirmKey (or WAITROOM_BOOKING_CONFIRM_KEY in secrets.existingSecret): the payment backend's key to confirm a paid order" }}
{{- end }}
{{- end }}
{{- with .Values.secrets.confirmKey }}
{{- if lt (len .) 16 }}
{{- fail "secrets.confirmKey must be at least 16 characters" }}
{{- end }}
{{- if eq . $.Values.secrets.adminKey }}
{{- fail "secrets.confirmKey must not be secrets.adminKey: the payment backend needs no operator's power" }}
{{- end }}
{{- end }}
{{- with .Values.secrets.webhooksSecret }}
{{- /* As the server reads it (config's webhooks.secret): standard, padded base64 after "whsec_". */}}
{{- if not (regexMatch "^whsec_([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$" .) }}
{{- fail "secrets.webhooksSecret must be \"whsec_\" and standard, padded base64 of 24 to 64 random bytes" }}
{{- end }}
{{- $bytes := len (trimPrefix "whsec_" . | b64dec) }}
{{- if or (lt $bytes 24) (gt $bytes 64) }}
{{- fail (printf "secrets.webhooksSecret must decode to 24 to 64 bytes, got %d bytes" $bytes) }}
{{- end }}
{{- end }}
{{- if and .Values.secrets.powSecret (lt (len .Values.secrets.powSecret) 32) }}
{{- fail "secrets.powSecret must be at least 32 characters" }}
{{- end }}
{{- with .Values.webhooks.url }}
{{- if not (or (hasPrefix "https://" .) (hasPrefix "http://" .)) }}
{{- fail "webhooks.url must be an http(s) URL" }}
{{- end }}
{{- if and (not $.Values.secrets.webhooksSecret) (not $.Values.secrets.existingSecret) }}
{{- fail "webhooks.url needs secrets.webhooksSecret (or WAITROOM_WEBHOOKS_SECRET in secrets.existingSecret): the server signs every webhook" }}
{{- end }}
{{- end }}
{{- if and .Values.ingress.enabled (not .Values.http.behindProxy) }}
{{- fail "ingress.enabled needs http.behindProxy: true and http.trustedProxies (the ingress controller's pods): behind an Ingress every request comes from the controller, so without them every client is one address and the per-address limits and the admin lockout lock out everyone at once" }}
{{- end }}
{{- if and .Values.http.behindProxy (not .Values.http.trustedProxies) }}
{{- fail "http.behindProxy needs http.trustedProxies: the addresses of the proxies whose X-Forwarded-For is believed" }}
{{- end }}
{{- if and .Values.gate.enabled (or (not .Values.gate.upstream) (not .Values.gate.paths)) }}
{{- fail "gate.enabled needs gate.upstream and gate.paths" }}
{{- end }}
{{- if and .Values.serviceMonitor.enabled (not .Values.service.publishOpsPort) }}
{{- fail "serviceMonitor.enabled needs service.publishOpsPort: true (the ServiceMonitor scrapes the Service's ops port), and a networkPolicy.opsFrom that admits the Prometheus pods" }}
{{- end }}
{{- if le (int .Values.drain.terminationGracePeriodSeconds) (add (int .Values.drain.preStopSleepSeconds) 10) }}
{{- fail "drain.terminationGracePeriodSeconds must exceed drain.preStopSleepSeconds + 10 (the server's drain)" }}
{{- end }}
{{- end }}
