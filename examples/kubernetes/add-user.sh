#!/usr/bin/env bash
# Adds a password user to a Gatehouse deployed from deploy/ (or this overlay).
#
#   printf '%s\n' 'a long passphrase' | examples/kubernetes/add-user.sh alice@example.com
#
# bbolt lets one process at a time open the database file, and the running
# Gatehouse holds it. So this scales the Deployment to zero, runs
# `gatehouse users add` in a one-off pod on the same volume, and scales it
# back to one: sign-ins are unavailable for the few seconds that takes.
# NAMESPACE (default gatehouse-demo) selects the namespace.
set -euo pipefail

email=${1:?usage: add-user.sh EMAIL, with the password on standard input}
case $email in *[\"\\]*) echo "add-user.sh: unexpected character in $email" >&2; exit 2 ;; esac
ns=${NAMESPACE:-gatehouse-demo}
k() { kubectl --namespace "$ns" "$@"; }

IFS= read -r password || [ -n "$password" ] || { echo "add-user.sh: no password on standard input" >&2; exit 2; }

image=$(k get deployment gatehouse -o jsonpath='{.spec.template.spec.containers[?(@.name=="gatehouse")].image}')
claim=$(k get deployment gatehouse -o jsonpath='{.spec.template.spec.volumes[?(@.name=="data")].persistentVolumeClaim.claimName}')

k scale deployment/gatehouse --replicas=0
trap 'k scale deployment/gatehouse --replicas=1' EXIT
k wait --for=delete pod --selector=app.kubernetes.io/name=gatehouse --timeout=90s 2>/dev/null || true

# The one-off pod: same image, same volume, same restricted security context.
overrides=$(cat <<JSON
{
  "apiVersion": "v1",
  "spec": {
    "automountServiceAccountToken": false,
    "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [{
      "name": "gatehouse-add-user",
      "image": "$image",
      "args": ["users", "add", "--email", "$email", "--password-stdin", "--db", "/var/lib/gatehouse/gatehouse.db"],
      "stdin": true,
      "stdinOnce": true,
      "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                          "capabilities": {"drop": ["ALL"]}},
      "volumeMounts": [{"name": "data", "mountPath": "/var/lib/gatehouse"}]
    }],
    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "$claim"}}]
  }
}
JSON
)
printf '%s\n' "$password" | k run gatehouse-add-user --image="$image" --restart=Never \
	--rm --stdin --quiet --overrides="$overrides"
