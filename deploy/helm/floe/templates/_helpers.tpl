{{/* The chart's name, truncated for label values. */}}
{{- define "floe.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name, the prefix of every object's name. */}}
{{- define "floe.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Selector labels of one component: pass (dict "ctx" $ "component" "broker"). */}}
{{- define "floe.selectorLabels" -}}
app.kubernetes.io/name: {{ include "floe.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Every label of one component's objects. */}}
{{- define "floe.labels" -}}
{{ include "floe.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "floe.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "floe.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "floe.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The S3 credentials' Secret, or nothing when the AWS default chain is used. */}}
{{- define "floe.s3SecretName" -}}
{{- if .Values.s3.credentials.existingSecret -}}
{{- .Values.s3.credentials.existingSecret -}}
{{- else if .Values.s3.credentials.accessKeyId -}}
{{- printf "%s-s3" (include "floe.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The headless Service of the chart's NATS StatefulSet. */}}
{{- define "floe.natsHeadless" -}}
{{- printf "%s-nats-headless" (include "floe.fullname" .) -}}
{{- end -}}

{{/* --nats-url: every server of the chart's NATS, or nats.url. */}}
{{- define "floe.natsURL" -}}
{{- if .Values.nats.enabled -}}
{{- $fullname := include "floe.fullname" . -}}
{{- $headless := include "floe.natsHeadless" . -}}
{{- $urls := list -}}
{{- range $i := until (int .Values.nats.replicas) -}}
{{- $urls = append $urls (printf "nats://%s-nats-%d.%s.%s.svc:%d" $fullname $i $headless $.Release.Namespace (int $.Values.nats.clientPort)) -}}
{{- end -}}
{{- join "," $urls -}}
{{- else -}}
{{- required "nats.url is required when nats.enabled=false" .Values.nats.url -}}
{{- end -}}
{{- end -}}

{{/* The flags brokers and coordinators share: cluster, NATS, S3. */}}
{{- define "floe.commonArgs" -}}
- --cluster={{ .Values.cluster }}
- --nats-url={{ include "floe.natsURL" . }}
- --log-level={{ .Values.logLevel }}
- --s3-bucket={{ required "s3.bucket is required" .Values.s3.bucket }}
{{- with .Values.s3.endpoint }}
- --s3-endpoint={{ . }}
{{- end }}
{{- with .Values.s3.region }}
- --s3-region={{ . }}
{{- end }}
{{- with .Values.s3.prefix }}
- --s3-prefix={{ . }}
{{- end }}
- --s3-path-style={{ .Values.s3.pathStyle }}
{{- if .Values.kvIndexEnabled }}
- --kv-index-enabled=true
{{- end }}
{{- end -}}

{{/* Environment both take: S3 credentials and the pod's own name and IP. */}}
{{- define "floe.commonEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
{{- with include "floe.s3SecretName" . }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.s3.credentials.accessKeyIdKey }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.s3.credentials.secretAccessKeyKey }}
{{- end }}
{{- end -}}

{{/* Fails the install on values that cannot work together. */}}
{{- define "floe.validate" -}}
{{- if and .Values.nats.enabled (gt (int .Values.coordinator.logReplicas) (int .Values.nats.replicas)) -}}
{{- fail (printf "coordinator.logReplicas (%d) is more than nats.replicas (%d): JetStream cannot place the log's replicas" (int .Values.coordinator.logReplicas) (int .Values.nats.replicas)) -}}
{{- end -}}
{{- if and .Values.s3.credentials.existingSecret .Values.s3.credentials.accessKeyId -}}
{{- fail "s3.credentials: set existingSecret or accessKeyId/secretAccessKey, not both" -}}
{{- end -}}
{{- if and .Values.s3.credentials.accessKeyId (not .Values.s3.credentials.secretAccessKey) -}}
{{- fail "s3.credentials.accessKeyId needs s3.credentials.secretAccessKey" -}}
{{- end -}}
{{- range .Values.broker.zones -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .) -}}
{{- fail (printf "broker.zones: %q is not a DNS label (it names the zone's StatefulSet)" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
