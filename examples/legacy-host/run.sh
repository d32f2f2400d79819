#!/usr/bin/env bash
# The walkthrough of README.md as a script: an app on 127.0.0.1:3000,
# Gatehouse in front of it on 127.0.0.1:8080, a user added from the command
# line, sign-in, forgotten password and reset through --mail-dir, sign-out.
# Every step checks the answer and the script stops at the first surprise.
#
#   examples/legacy-host/run.sh        # from the repository root; needs go and curl
#
# Environment (all optional):
#   GATEHOUSE, DEMO_UPSTREAM  binaries to use; built from this repository when unset
#   WORK                      folder for the database, the mails and the logs (default: a new temporary one)
#   APP_ADDR, PROXY_ADDR, ADMIN_ADDR   default 127.0.0.1:3000, 127.0.0.1:8080, 127.0.0.1:9090
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
WORK=${WORK:-$(mktemp -d)}
APP_ADDR=${APP_ADDR:-127.0.0.1:3000}
PROXY_ADDR=${PROXY_ADDR:-127.0.0.1:8080}
ADMIN_ADDR=${ADMIN_ADDR:-127.0.0.1:9090}
BASE=http://$PROXY_ADDR
EMAIL=alice@example.com
PASSWORD='correct horse battery staple'
NEW_PASSWORD='a brand new passphrase'
jar=$WORK/cookies.txt

step() { printf '\n==> %s\n' "$*"; }
fail() {
	echo "FAIL: $*" >&2
	[ -f "$WORK/gatehouse.log" ] && { echo "--- gatehouse log:" >&2; tail -n 20 "$WORK/gatehouse.log" >&2; }
	exit 1
}

# expect STATUS CURL-ARGS...: one request; the body lands in $WORK/body and
# the response headers in $WORK/headers.
expect() {
	local want=$1 got
	shift
	got=$(curl -sS -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' "$@") || fail "curl $*"
	[ "$got" = "$want" ] || fail "curl $*: status $got, want $want: $(head -c 300 "$WORK/body")"
	echo "    $want  ${*: -1}"
}

json() { printf '{"email":"%s","password":"%s"}' "$1" "$2"; }

# in_use HOST:PORT: something accepts TCP connections there.
in_use() {
	local host=${1%:*} port=${1##*:}
	host=${host#[}
	host=${host%]}
	(exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

# started NAME PID: the process we just started is still running, so what
# answers on its port is this process and not a stranger.
started() {
	kill -0 "$2" 2>/dev/null || fail "$1 exited at start: $(tail -n 3 "$WORK/$1.log" 2>/dev/null)"
}

pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

mkdir -p "$WORK"
# Nothing may answer on our ports before we start: the checks below would
# talk to it and pass or fail for the wrong reason.
for addr in "$APP_ADDR" "$PROXY_ADDR" "$ADMIN_ADDR"; do
	if in_use "$addr"; then
		fail "port ${addr##*:} is in use ($addr answers before anything was started); stop what listens there or choose another address with APP_ADDR, PROXY_ADDR or ADMIN_ADDR"
	fi
done
if [ -z "${GATEHOUSE:-}" ] || [ -z "${DEMO_UPSTREAM:-}" ]; then
	step "build gatehouse and the demo app into $WORK/bin"
	(cd "$repo" && go build -o "$WORK/bin/" ./cmd/gatehouse ./examples/demo-upstream)
	GATEHOUSE=${GATEHOUSE:-$WORK/bin/gatehouse}
	DEMO_UPSTREAM=${DEMO_UPSTREAM:-$WORK/bin/demo-upstream}
fi

step "1. the legacy app listens on $APP_ADDR, loopback only"
"$DEMO_UPSTREAM" --listen="$APP_ADDR" 2>"$WORK/app.log" &
app=$!
pids+=($app)
for _ in $(seq 100); do
	in_use "$APP_ADDR" && break
	started app "$app"
	sleep 0.1
done
started app "$app"

step "2. add a user (before the first start, users add creates the database; once gatehouse runs, such commands go through its admin socket)"
printf '%s\n' "$PASSWORD" | "$GATEHOUSE" users add --email "$EMAIL" --password-stdin --db "$WORK/gatehouse.db"

step "3. start gatehouse on $PROXY_ADDR in front of the app"
"$GATEHOUSE" \
	--listen="$PROXY_ADDR" \
	--upstream="http://$APP_ADDR" \
	--base-url="$BASE" \
	--db="$WORK/gatehouse.db" \
	--mail-dir="$WORK/mail" \
	--admin-listen="$ADMIN_ADDR" \
	2>"$WORK/gatehouse.log" &
gatehouse=$!
pids+=($gatehouse)
for _ in $(seq 100); do
	started gatehouse "$gatehouse"
	curl -fsS -o /dev/null "http://$ADMIN_ADDR/readyz" 2>/dev/null && break
	sleep 0.1
done
expect 200 "http://$ADMIN_ADDR/readyz"
started gatehouse "$gatehouse"

step "4. without a session the app is out of reach: a redirect to the sign-in page"
expect 302 "$BASE/"
grep -qi '^location: .*/auth/login?rd=' "$WORK/headers" || fail "no redirect to /auth/login: $(cat "$WORK/headers")"
expect 200 "$BASE/auth/login"

step "5. sign in"
expect 200 -c "$jar" -H 'Content-Type: application/json' --data "$(json "$EMAIL" "$PASSWORD")" "$BASE/auth/login"
expect 200 -b "$jar" "$BASE/"
grep -q "Hello, $EMAIL" "$WORK/body" || fail "the app did not greet $EMAIL: $(cat "$WORK/body")"
expect 200 -b "$jar" "$BASE/auth/me"

step "6. forgot the password: the reset link arrives in $WORK/mail as an .eml file"
expect 202 -H 'Content-Type: application/json' --data "{\"email\":\"$EMAIL\"}" "$BASE/auth/forgot"
mail=
for _ in $(seq 150); do
	mail=$(find "$WORK/mail" -name '*.eml' 2>/dev/null | head -n 1) || true
	[ -n "$mail" ] && break
	sleep 0.1
done
[ -n "$mail" ] || fail "no .eml file in $WORK/mail"
echo "    $mail"
# The text part is plain 7bit: the link is on one line, as it is.
link=$(grep -o 'https\?://[^ "<>]*/auth/reset?token=[A-Za-z0-9_-]*' "$mail" | head -n 1) || true
[ -n "$link" ] || fail "no reset link in $mail"
token=${link##*token=}
echo "    $link"

step "7. reset the password with the token from the mail"
expect 200 "$link"
expect 200 -H 'Content-Type: application/json' --data "{\"token\":\"$token\",\"password\":\"$NEW_PASSWORD\"}" "$BASE/auth/reset"
expect 400 -H 'Content-Type: application/json' --data "{\"token\":\"$token\",\"password\":\"$NEW_PASSWORD\"}" "$BASE/auth/reset"
echo "    the token is used up, and the reset signed out every session:"
expect 302 -b "$jar" "$BASE/"
expect 401 -H 'Content-Type: application/json' --data "$(json "$EMAIL" "$PASSWORD")" "$BASE/auth/login"
expect 200 -c "$jar" -H 'Content-Type: application/json' --data "$(json "$EMAIL" "$NEW_PASSWORD")" "$BASE/auth/login"
expect 200 -b "$jar" "$BASE/"

step "8. sign out"
expect 204 -b "$jar" -c "$jar" -X POST "$BASE/auth/logout"
expect 302 -b "$jar" "$BASE/"

step "walkthrough passed; files are in $WORK"
