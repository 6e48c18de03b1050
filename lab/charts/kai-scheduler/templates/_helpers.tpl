{{/* Image tag: global.tag, else the release tag (appVersion without build metadata). */}}
{{- define "kai.tag" -}}
{{- default (regexReplaceAll "\\+.*$" .Chart.AppVersion "") .Values.global.tag -}}
{{- end -}}

{{- define "kai.image" -}}
{{ .root.Values.global.registry }}/{{ .name }}:{{ include "kai.tag" .root }}
{{- end -}}

{{- define "kai.release" -}}
{{- default (include "kai.tag" .) .Values.standin.release -}}
{{- end -}}

{{/* Every object says what it is: the inventory reports "KAI stand-in" from this label. */}}
{{- define "kai.labels" -}}
kaiops.dev/kai-implementation: standin
kaiops.dev/kai-standin-release: {{ include "kai.release" . | quote }}
app.kubernetes.io/part-of: kai-scheduler
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* One Deployment of a stand-in component; KAI's shape: name = app label = container = SA. */}}
{{- define "kai.deployment" -}}
{{- $root := .root -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    app: {{ .name }}
    {{- include "kai.labels" $root | nindent 4 }}
spec:
  replicas: 1
  strategy:
    type: {{ .strategy | default "RollingUpdate" }}
  selector:
    matchLabels:
      app: {{ .name }}
  template:
    metadata:
      labels:
        app: {{ .name }}
        kaiops.dev/kai-implementation: standin
      annotations:
        kaiops.dev/kai-standin-release: {{ include "kai.release" $root | quote }}
        {{- with $root.Values.standin.build }}
        kaiops.dev/kai-standin-build: {{ . | quote }}
        {{- end }}
        {{- with .podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ .name }}
      terminationGracePeriodSeconds: 5
      containers:
        - name: {{ .name }}
          image: {{ include "kai.image" (dict "root" $root "name" .image) }}
          imagePullPolicy: {{ $root.Values.global.imagePullPolicy }}
          args:
            - {{ .component }}
            - --standin-release={{ include "kai.release" $root }}
            {{- range .args }}
            - {{ . | quote }}
            {{- end }}
          env:
            - name: NODE_NAME
              valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
            - name: POD_NAMESPACE
              valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
          {{- with .ports }}
          ports:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with .readiness }}
          readinessProbe:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          resources:
            {{- toYaml (.resources | default $root.Values.standin.resources) | nindent 12 }}
          securityContext:
            allowPrivilegeEscalation: false
            runAsNonRoot: true
            runAsUser: 10000
            capabilities: {drop: ["ALL"]}
          {{- with .mounts }}
          volumeMounts:
            {{- toYaml . | nindent 12 }}
          {{- end }}
      {{- with .volumes }}
      volumes:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}

{{/* The binder's plugin map, keys sorted as KAI's operator writes them. */}}
{{- define "kai.binderPlugins" -}}
{{- dict
  "dynamicresources" (dict "enabled" true "priority" 200 "arguments" dict)
  "gpusharing" (dict "enabled" true "priority" 100 "arguments" (dict "cdiEnabled" "false"))
  "hamicore" (dict "enabled" false "priority" 50 "arguments" dict)
  "volumebinding" (dict "enabled" true "priority" 300 "arguments" dict)
  | toJson -}}
{{- end -}}
