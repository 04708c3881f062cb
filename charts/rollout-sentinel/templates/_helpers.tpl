{{- /*
"rollout-sentinel.generatedName": the name kustomize gives a generated ConfigMap or Secret, the
base name and a suffix hashed from the content (sigs.k8s.io/kustomize/api/hasher), so that a
changed value renames it and rolls the Pods that mount it, exactly as a kustomize generator
would. The hash covers kind, data and (Secrets) type; the name itself comes out empty because
kustomize looks it up under a path it never finds, so it is empty here too.
Argument: dict "name" "kind" "data" and, for a Secret, "type".
*/ -}}
{{- define "rollout-sentinel.generatedName" -}}
{{- $encoded := dict "kind" .kind "name" "" "data" .data -}}
{{- if eq .kind "Secret" }}{{ $_ := set $encoded "type" .type }}{{ end -}}
{{- $hex := $encoded | toJson | sha256sum | trunc 10 -}}
{{- printf "%s-%s" .name ($hex | replace "0" "g" | replace "1" "h" | replace "3" "k" | replace "a" "m" | replace "e" "t") -}}
{{- end -}}
