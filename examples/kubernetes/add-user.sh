#!/usr/bin/env bash
# Adds a password user to a Gatehouse deployed from deploy/ (or this overlay),
# while it runs:
#
#   printf '%s\n' 'a long passphrase' | examples/kubernetes/add-user.sh alice@example.com
#   INVITE=1 examples/kubernetes/add-user.sh bob@example.com   # mails an invitation instead
#
# The command runs inside the gatehouse container with `kubectl exec` and
# talks to the running server through its admin socket (gatehouse.sock beside
# the database, mode 0600, same user): nothing is stopped or scaled, and the
# user can sign in on the next request. Any other `gatehouse users …` or
# `gatehouse sessions …` command works the same way.
# NAMESPACE (default gatehouse-demo) selects the namespace.
set -euo pipefail

email=${1:?usage: add-user.sh EMAIL, with the password on standard input (or INVITE=1)}
ns=${NAMESPACE:-gatehouse-demo}
db=/var/lib/gatehouse/gatehouse.db
gatehouse() { kubectl --namespace "$ns" exec --stdin deploy/gatehouse -c gatehouse -- gatehouse "$@"; }

if [ -n "${INVITE:-}" ]; then
	gatehouse users add "$email" --invite --db "$db" </dev/null
	exit
fi
IFS= read -r password || [ -n "$password" ] || { echo "add-user.sh: no password on standard input" >&2; exit 2; }
printf '%s\n' "$password" | gatehouse users add "$email" --password-stdin --db "$db"
