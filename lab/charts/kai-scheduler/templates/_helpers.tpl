{{/* Image tag: global.tag, else the release tag (appVersion without build metadata). */}}
{{- define "kai.tag" -}}
{{- default (regexReplaceAll "\\+.*$" .Chart.AppVersion "") .Values.global.tag -}}
{{- end -}}

{{- define "kai.image" -}}
{{ .root.Values.global.registry }}/{{ .name }}:{{ include "kai.tag" .root }}
{{- end -}}

{{/* KAI's Config image block: repository, name, tag, pull policy. */}}
{{- define "kai.imageSpec" -}}
repository: {{ .root.Values.global.registry }}
name: {{ .name }}
tag: {{ include "kai.tag" .root | quote }}
pullPolicy: {{ .root.Values.global.imagePullPolicy }}
{{- end -}}

{{- define "kai.release" -}}
{{- default (include "kai.tag" .) .Values.standin.release -}}
{{- end -}}

{{/* Every object says what it is: the inventory reports "KAI stand-in" from this label. */}}
{{- define "kai.standinLabels" -}}
kaiops.dev/kai-implementation: standin
kaiops.dev/kai-standin-release: {{ include "kai.release" . | quote }}
app.kubernetes.io/part-of: kai-scheduler
{{- end -}}

{{- define "kai.labels" -}}
{{ include "kai.standinLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "kai.hookAnnotations" -}}
helm.sh/hook: {{ .hook }}
helm.sh/hook-weight: {{ .weight | quote }}
helm.sh/hook-delete-policy: {{ .policy | default "before-hook-creation,hook-succeeded" }}
{{- end -}}

{{/* A hook Job of the stand-in image (KAI's crd-upgrader image plays these roles). */}}
{{- define "kai.hookJob" -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    app: {{ .name }}
    {{- include "kai.labels" .root | nindent 4 }}
  annotations: {{- include "kai.hookAnnotations" . | nindent 4 }}
spec:
  backoffLimit: 2
  activeDeadlineSeconds: 300
  template:
    metadata:
      labels:
        app: {{ .name }}
        kaiops.dev/kai-implementation: standin
    spec:
      serviceAccountName: {{ .name }}
      restartPolicy: Never
      terminationGracePeriodSeconds: 5
      containers:
        - name: {{ .name }}
          image: {{ include "kai.image" (dict "root" .root "name" "crd-upgrader") }}
          imagePullPolicy: {{ .root.Values.global.imagePullPolicy }}
          args:
            {{- toYaml .args | nindent 12 }}
          resources:
            {{- toYaml .root.Values.standin.resources | nindent 12 }}
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

{{/* The hook Job's ServiceAccount and its cluster-wide grants, created just before it. */}}
{{- define "kai.hookRBAC" -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels: {{- include "kai.labels" .root | nindent 4 }}
  annotations: {{- include "kai.hookAnnotations" (dict "hook" .hook "weight" -1) | nindent 4 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .name }}
  labels: {{- include "kai.labels" .root | nindent 4 }}
  annotations: {{- include "kai.hookAnnotations" (dict "hook" .hook "weight" -1) | nindent 4 }}
rules: {{- toYaml .rules | nindent 2 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .name }}
  labels: {{- include "kai.labels" .root | nindent 4 }}
  annotations: {{- include "kai.hookAnnotations" (dict "hook" .hook "weight" -1) | nindent 4 }}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {{ .name }}}
subjects: [{kind: ServiceAccount, name: {{ .name }}, namespace: {{ .root.Release.Namespace }}}]
{{- end -}}
