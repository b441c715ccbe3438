{{/* The six gRPC services, in the order callers depend on them. */}}
{{- define "icv.grpcServices" -}}
verification proof session domain webhook log
{{- end -}}

{{/*
Who may call each service over mutual TLS: the union of the callers in the service's allow-list
(services/<name>/src/callers.ts). The NetworkPolicies admit exactly these pods on the gRPC port;
test/deploy/chart.test.ts compares this table with the allow-lists.
*/}}
{{- define "icv.callers" -}}
verification: [gateway, session]
proof: [gateway, verification]
session: [gateway]
domain: [verification]
webhook: [gateway]
log: [gateway, verification]
{{- end -}}

{{/* The port of the plain-text grpc.health.v1 listener (probes), from values. */}}
{{- define "icv.healthPort" -}}
{{- .Values.tls.healthPort | int -}}
{{- end -}}

{{/* The Secret with one service's certificate (ca.crt, tls.crt, tls.key): (dict "root" $ "name" "proof") */}}
{{- define "icv.tlsSecretName" -}}
{{- printf "%s-tls" (include "icv.componentName" .) -}}
{{- end -}}

{{- define "icv.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* release-icv, or just the release name when it already contains "icv" */}}
{{- define "icv.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Name of one service's objects: (dict "root" $ "name" "proof") */}}
{{- define "icv.componentName" -}}
{{- printf "%s-%s" (include "icv.fullname" .root) .name -}}
{{- end -}}

{{- define "icv.selectorLabels" -}}
app.kubernetes.io/name: {{ include "icv.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{- define "icv.labels" -}}
{{ include "icv.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: icv
{{- end -}}

{{- define "icv.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- define "icv.secretName" -}}
{{- .Values.secret.existingSecret | default (include "icv.fullname" .) -}}
{{- end -}}

{{- define "icv.providerSecretName" -}}
{{- .Values.providerSecret.existingSecret | default (printf "%s-providers" (include "icv.fullname" .)) -}}
{{- end -}}

{{- define "icv.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "icv.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* Fails the install early on values that would start a broken deployment. */}}
{{- define "icv.validate" -}}
{{- if not .Values.publicBaseUrl -}}
{{- fail "publicBaseUrl is required (the gateway's public URL, e.g. https://icv.example.com)" -}}
{{- end -}}
{{- $session := .Values.services.session -}}
{{- if eq (toString (merge (deepCopy ($session.env | default dict)) (deepCopy (.Values.env | default dict))).TELEGRAM_MODE) "polling" -}}
{{- if or (ne ($session.replicas | int) 1) (eq (include "icv.autoscaling" (dict "root" . "name" "session") | fromYaml).enabled true) -}}
{{- fail "TELEGRAM_MODE=polling needs services.session.replicas=1 and no autoscaling for session (two pollers would steal each other's updates)" -}}
{{- end -}}
{{- end -}}
{{- if not .Values.secret.existingSecret -}}
{{- $s := .Values.secret -}}
{{- if not $s.PROOF_KEY_ENCRYPTION_KEY -}}{{- fail "secret.PROOF_KEY_ENCRYPTION_KEY is required (openssl rand -base64 32): without it each proof pod would generate its own" -}}{{- end -}}
{{- if not $s.LOG_KEY_ENCRYPTION_KEY -}}{{- fail "secret.LOG_KEY_ENCRYPTION_KEY is required (openssl rand -base64 32): without it each log pod would generate its own" -}}{{- end -}}
{{- if not $s.CHALLENGE_HMAC_KEY -}}{{- fail "secret.CHALLENGE_HMAC_KEY is required (openssl rand -base64 32)" -}}{{- end -}}
{{- if not $s.DATA_ENCRYPTION_KEY -}}{{- fail "secret.DATA_ENCRYPTION_KEY is required (openssl rand -base64 32): it seals personal data; without it each verification pod would generate its own" -}}{{- end -}}
{{- if not $s.DATA_BLIND_INDEX_KEY -}}{{- fail "secret.DATA_BLIND_INDEX_KEY is required (openssl rand -base64 32)" -}}{{- end -}}
{{- if not $s.ADMIN_TOKEN -}}{{- fail "secret.ADMIN_TOKEN is required (at least 24 characters)" -}}{{- end -}}
{{- if not (or $s.DATABASE_URL .Values.externalDatabase.existingSecret) -}}
{{- range $name := splitList " " (printf "gateway %s" (include "icv.grpcServices" $)) -}}
{{- if not (get $s (printf "%s_DATABASE_URL" (upper $name))) -}}
{{- fail (printf "secret.DATABASE_URL (or secret.%s_DATABASE_URL) is required: in a cluster every service needs Postgres" (upper $name)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* One service's autoscaling settings (YAML): services.<name>.autoscaling over the global autoscaling. (dict "root" $ "name" "proof") */}}
{{- define "icv.autoscaling" -}}
{{- $svc := index .root.Values.services .name -}}
{{- toYaml (merge (deepCopy ($svc.autoscaling | default dict)) (deepCopy .root.Values.autoscaling)) -}}
{{- end -}}

{{/* The Secret key a service reads DATABASE_URL from: its own key when given, else DATABASE_URL. */}}
{{- define "icv.databaseUrlKey" -}}
{{- $svc := index .root.Values.services .name -}}
{{- $own := printf "%s_DATABASE_URL" (upper .name) -}}
{{- if get $svc "databaseUrlKey" -}}
{{- get $svc "databaseUrlKey" -}}
{{- else if .root.Values.externalDatabase.existingSecret -}}
{{- .root.Values.externalDatabase.urlKey | default "DATABASE_URL" -}}
{{- else if and (not .root.Values.secret.existingSecret) (get .root.Values.secret $own) -}}
{{- $own -}}
{{- else -}}
DATABASE_URL
{{- end -}}
{{- end -}}

{{/* The Secret holding the Postgres URL(s): externalDatabase.existingSecret, else the main one. */}}
{{- define "icv.databaseSecretName" -}}
{{- .Values.externalDatabase.existingSecret | default (include "icv.secretName" .) -}}
{{- end -}}

{{/* REDIS_URL and KAFKA_BROKERS: from externalRedis/externalKafka's Secret when named, else (optional) from the main one. */}}
{{- define "icv.externalEnv" -}}
{{- $secret := include "icv.secretName" . -}}
{{- $redis := .Values.externalRedis -}}
{{- $kafka := .Values.externalKafka -}}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      {{- if $redis.existingSecret }}
      name: {{ $redis.existingSecret }}
      key: {{ $redis.urlKey | default "REDIS_URL" }}
      {{- else }}
      name: {{ $secret }}
      key: REDIS_URL
      optional: true
      {{- end }}
{{- if $kafka.existingSecret }}
- name: KAFKA_BROKERS
  valueFrom:
    secretKeyRef:
      name: {{ $kafka.existingSecret }}
      key: {{ $kafka.brokersKey | default "KAFKA_BROKERS" }}
{{- else if $kafka.brokers }}
- name: KAFKA_BROKERS
  value: {{ $kafka.brokers | quote }}
{{- else }}
- name: KAFKA_BROKERS
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: KAFKA_BROKERS
      optional: true
{{- end }}
{{- end -}}

{{/* Environment of one service's container: (dict "root" $ "name" "proof") */}}
{{- define "icv.env" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- $svc := index $root.Values.services $name -}}
{{- $secret := include "icv.secretName" $root -}}
- name: NODE_ENV
  value: production
{{- with $root.Values.nodeOptions }}
- name: NODE_OPTIONS
  value: {{ . | quote }}
{{- end }}
- name: LOG_LEVEL
  value: {{ $root.Values.logLevel | quote }}
- name: PUBLIC_BASE_URL
  value: {{ $root.Values.publicBaseUrl | quote }}
{{- with $root.Values.proofIssuer }}
- name: PROOF_ISSUER
  value: {{ . | quote }}
{{- end }}
- name: DATA_DIR
  value: /tmp/icv
- name: GRPC_HOST
  value: "0.0.0.0"
- name: BOOTSTRAP_DEV_TENANT
  value: "false"
- name: METRICS_PORT
  value: {{ $root.Values.metrics.port | int | quote }}
- name: METRICS_HOST
  value: "0.0.0.0"
- name: SHUTDOWN_TIMEOUT_MS
  value: {{ $root.Values.shutdownTimeoutMs | int | quote }}
- name: RATE_LIMIT_PER_MINUTE
  value: {{ $root.Values.rateLimitPerMinute | int | quote }}
{{- range $other := splitList " " (include "icv.grpcServices" $root) }}
{{- $o := index $root.Values.services $other }}
- name: {{ upper $other }}_GRPC_PORT
  value: {{ $o.grpcPort | int | quote }}
- name: {{ upper $other }}_URL
  value: {{ printf "https://%s:%d" (include "icv.componentName" (dict "root" $root "name" $other)) ($o.grpcPort | int) | quote }}
{{- end }}
{{- if ne $name "gateway" }}
- name: {{ upper $name }}_HEALTH_PORT
  value: {{ include "icv.healthPort" $root | quote }}
{{- end }}
# mutual TLS between the services: this Deployment's certificate, mounted read-only
- name: TLS_CA_FILE
  value: /etc/icv/tls/ca.crt
- name: TLS_CERT_FILE
  value: /etc/icv/tls/tls.crt
- name: TLS_KEY_FILE
  value: /etc/icv/tls/tls.key
- name: TLS_RELOAD_INTERVAL_MS
  value: {{ $root.Values.tls.reloadIntervalMs | int | quote }}
{{- if and $root.Values.internalClients (ne $name "gateway") }}
# internal teams' clients (internalClients): the file from the ConfigMap
- name: INTERNAL_CLIENTS_FILE
  value: /etc/icv/clients/internal-clients.yaml
{{- end }}
{{- if eq $name "gateway" }}
- name: HOST
  value: "0.0.0.0"
- name: PORT
  value: {{ $svc.port | int | quote }}
- name: ADMIN_PORT
  value: {{ $svc.adminPort | int | quote }}
- name: ADMIN_HOST
  value: {{ $svc.adminHost | default "127.0.0.1" | quote }}
{{- with ($root.Values.trustProxy | default (ternary "1" "" $root.Values.ingress.enabled)) }}
- name: TRUST_PROXY
  value: {{ . | quote }}
{{- end }}
{{- with $svc.http }}
- name: HTTP_REQUEST_TIMEOUT_MS
  value: {{ .requestTimeoutMs | int | quote }}
- name: HTTP_HEADERS_TIMEOUT_MS
  value: {{ .headersTimeoutMs | int | quote }}
- name: HTTP_KEEP_ALIVE_TIMEOUT_MS
  value: {{ .keepAliveTimeoutMs | int | quote }}
{{- end }}
{{- $cap := toString (($svc.http).maxConnectionsPerIp | default "") }}
- name: HTTP_MAX_CONNECTIONS_PER_IP
  value: {{ ternary $cap (ternary "0" "256" $root.Values.ingress.enabled) (ne $cap "") | quote }}
{{- end }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "icv.databaseSecretName" $root }}
      key: {{ include "icv.databaseUrlKey" . }}
{{- if or (eq $name "webhook") (eq $name "gateway") }}
# they consume verification events: the postgres event transport reads them from the
# verification service's outbox (unused with KAFKA_BROKERS)
- name: VERIFICATION_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "icv.databaseSecretName" $root }}
      key: {{ include "icv.databaseUrlKey" (dict "root" $root "name" "verification") }}
{{- end }}
{{- if eq $name "log" }}
# it consumes the proof events: the postgres event transport reads them from the proof
# service's outbox (unused with KAFKA_BROKERS)
- name: PROOF_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "icv.databaseSecretName" $root }}
      key: {{ include "icv.databaseUrlKey" (dict "root" $root "name" "proof") }}
- name: LOG_KEY_ENCRYPTION_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: LOG_KEY_ENCRYPTION_KEY
{{- end }}
{{ include "icv.externalEnv" $root }}
{{- if eq $name "proof" }}
- name: PROOF_KEY_ENCRYPTION_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: PROOF_KEY_ENCRYPTION_KEY
{{- end }}
{{- if or (eq $name "verification") (eq $name "session") }}
# verification: HMAC of challenge codes; session: session tokens and QR signatures are derived
# from it (both need the same value)
- name: CHALLENGE_HMAC_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: CHALLENGE_HMAC_KEY
{{- end }}
{{- if or (eq $name "verification") (eq $name "gateway") (eq $name "session") (eq $name "webhook") }}
# personal data at rest (docs/privacy.md): the sealing key (versions) and the blind-index key
# (verification: its rows and the client_metadata its events carry sealed; gateway: the stored
# answers of Idempotency-Key requests; session: its numbers; webhook: it opens the events'
# client_metadata and seals the delivery bodies it stores)
- name: DATA_ENCRYPTION_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: DATA_ENCRYPTION_KEY
- name: DATA_BLIND_INDEX_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: DATA_BLIND_INDEX_KEY
{{- end }}
{{- if eq $name "gateway" }}
- name: ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: ADMIN_TOKEN
{{- end }}
{{- range $k, $v := merge (deepCopy ($svc.env | default dict)) (deepCopy ($root.Values.env | default dict)) }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end -}}

{{/*
One service: Deployment, Service, PodDisruptionBudget (at least 2 replicas) and
HorizontalPodAutoscaler (autoscaling enabled).
(dict "root" $ "name" "proof")
*/}}
{{- define "icv.component" -}}
{{- $root := .root -}}
{{- $name := .name -}}
{{- $svc := index $root.Values.services $name -}}
{{- $fullName := include "icv.componentName" . -}}
{{- $gateway := eq $name "gateway" -}}
{{- $port := 0 -}}
{{- if $gateway -}}{{- $port = $svc.port | int -}}{{- else -}}{{- $port = $svc.grpcPort | int -}}{{- end -}}
{{- $portName := ternary "http" "grpc" $gateway -}}
{{- $grace := add (div ($root.Values.shutdownTimeoutMs | int) 1000) ($root.Values.preStopSleepSeconds | int) 5 -}}
{{- $autoscaling := include "icv.autoscaling" . | fromYaml -}}
{{- $minReplicas := ternary ($autoscaling.minReplicas | int) ($svc.replicas | int) (eq $autoscaling.enabled true) -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $fullName }}
  labels:
    {{- include "icv.labels" . | nindent 4 }}
spec:
  {{- if not $autoscaling.enabled }}
  replicas: {{ $svc.replicas | int }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "icv.selectorLabels" . | nindent 6 }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
      maxUnavailable: 0
  template:
    metadata:
      labels:
        {{- include "icv.selectorLabels" . | nindent 8 }}
      annotations:
        checksum/secret: {{ include (print $root.Template.BasePath "/secret.yaml") $root | sha256sum }}
        {{- if $root.Values.internalClients }}
        # a changed client list rolls the pods (they read the file at start)
        checksum/internal-clients: {{ include (print $root.Template.BasePath "/internal-clients.yaml") $root | sha256sum }}
        {{- end }}
        {{- with $root.Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "icv.serviceAccountName" $root }}
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: {{ $grace }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      containers:
        - name: {{ $name }}
          image: {{ include "icv.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command:
            {{- range $root.Values.image.command }}
            - {{ . | quote }}
            {{- end }}
            - {{ replace "{name}" $name $root.Values.image.entrypoint | quote }}
          ports:
            - name: {{ $portName }}
              containerPort: {{ $port }}
              protocol: TCP
            {{- if not $gateway }}
            - name: health
              containerPort: {{ include "icv.healthPort" $root }}
              protocol: TCP
            {{- end }}
            - name: metrics
              containerPort: {{ $root.Values.metrics.port | int }}
              protocol: TCP
          env:
            {{- include "icv.env" . | nindent 12 }}
          {{- if or $root.Values.providerSecret.existingSecret $root.Values.providerSecret.values }}
          envFrom:
            - secretRef:
                name: {{ include "icv.providerSecretName" $root }}
          {{- end }}
          {{- if $gateway }}
          startupProbe:
            httpGet:
              path: /api/v1
              port: http
            periodSeconds: 2
            failureThreshold: 60
          # /health asks the database and every service: a gateway whose verification or proof
          # service is unreachable answers 503 and leaves the endpoints until they are back
          readinessProbe:
            httpGet:
              path: /health
              port: http
            periodSeconds: 10
            timeoutSeconds: 3
            failureThreshold: 3
          # liveness only asks whether this process answers HTTP (a dependency being down must
          # not restart the gateway)
          livenessProbe:
            httpGet:
              path: /api/v1
              port: http
            periodSeconds: 20
            timeoutSeconds: 3
            failureThreshold: 3
          {{- else }}
          # grpc.health.v1 on the plain health port (the gRPC port requires a client
          # certificate, which the kubelet does not have; this port serves health and nothing
          # else). It opens before the service waits for Postgres: service "liveness" is
          # SERVING from then on; service "" (readiness) is SERVING once started and while its
          # database answers. A pod that waits for Postgres stays out of the Service and is
          # not restarted: it turns ready by itself when Postgres comes.
          startupProbe:
            grpc:
              port: {{ include "icv.healthPort" $root }}
              service: liveness
            periodSeconds: 2
            failureThreshold: 60
          readinessProbe:
            grpc:
              port: {{ include "icv.healthPort" $root }}
            periodSeconds: 10
            timeoutSeconds: 3
            failureThreshold: 3
          livenessProbe:
            grpc:
              port: {{ include "icv.healthPort" $root }}
              service: liveness
            periodSeconds: 20
            timeoutSeconds: 3
            failureThreshold: 3
          {{- end }}
          lifecycle:
            preStop:
              exec:
                command: ["sleep", {{ $root.Values.preStopSleepSeconds | int | toString | quote }}]
          resources:
            {{- toYaml $svc.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            - name: tls
              mountPath: /etc/icv/tls
              readOnly: true
            {{- if and $root.Values.internalClients (ne .name "gateway") }}
            - name: internal-clients
              mountPath: /etc/icv/clients
              readOnly: true
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 256Mi
        # no checksum annotation: a renewed certificate reaches the running pods through the
        # mount, and the service reloads it without a restart
        - name: tls
          secret:
            secretName: {{ include "icv.tlsSecretName" . }}
            defaultMode: 0440
        {{- if and $root.Values.internalClients (ne .name "gateway") }}
        - name: internal-clients
          configMap:
            name: {{ include "icv.fullname" $root }}-internal-clients
        {{- end }}
      {{- with $root.Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $root.Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if $root.Values.topologySpread.enabled }}
      topologySpreadConstraints:
        {{- range $root.Values.topologySpread.topologyKeys }}
        - maxSkew: 1
          topologyKey: {{ . }}
          whenUnsatisfiable: {{ $root.Values.topologySpread.whenUnsatisfiable }}
          labelSelector:
            matchLabels:
              {{- include "icv.selectorLabels" $ | nindent 14 }}
        {{- end }}
      {{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $fullName }}
  labels:
    {{- include "icv.labels" . | nindent 4 }}
spec:
  {{- if $gateway }}
  type: {{ $svc.service.type }}
  {{- else }}
  type: ClusterIP
  {{- end }}
  selector:
    {{- include "icv.selectorLabels" . | nindent 4 }}
  ports:
    - name: {{ $portName }}
      {{- if $gateway }}
      port: {{ $svc.service.port | default 80 | int }}
      {{- else }}
      port: {{ $port }}
      {{- end }}
      targetPort: {{ $portName }}
      protocol: TCP
{{- if and $root.Values.podDisruptionBudget.enabled $svc.pdb.enabled (ge $minReplicas 2) }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $fullName }}
  labels:
    {{- include "icv.labels" . | nindent 4 }}
spec:
  maxUnavailable: {{ $root.Values.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "icv.selectorLabels" . | nindent 6 }}
{{- end }}
{{- if $autoscaling.enabled }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ $fullName }}
  labels:
    {{- include "icv.labels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ $fullName }}
  minReplicas: {{ $autoscaling.minReplicas | int }}
  maxReplicas: {{ $autoscaling.maxReplicas | int }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $autoscaling.targetCPUUtilizationPercentage | int }}
{{- end }}
{{- end -}}
