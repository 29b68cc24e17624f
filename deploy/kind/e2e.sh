#!/usr/bin/env bash
# End-to-end check of acl-operator in a cluster: `make e2e` after `make kind-up`.
#
#  1. applies deploy/examples/opa-sidecar.yaml (tenant shop: a Rule, a Connector, a Bundle, and a
#     Deployment with an OPA sidecar) and waits for the Rule, Connector and Bundle to be Ready;
#  2. waits for the connector's token Secret and for the storefront pod (ready = OPA activated the bundle);
#  3. creates an API key and asks the operator for decisions over HTTPS, trusting the ca.crt the
#     operator put in the token Secret (the same file OPA trusts): allow for a matching request, deny
#     for another team;
#  4. reads the bundle revision OPA activated (Data API: data.system.bundles) and compares it with the
#     Bundle's status.revision, and asks OPA the same questions;
#  5. edits the Rule and checks that OPA gets the new revision and decides with it, then restores it.
#
# Environment: KUBE_CONTEXT (the Makefile passes kind-acl-operator; default: the current context),
# E2E_TIMEOUT (seconds per wait, default 180), E2E_API_PORT / E2E_OPA_PORT (local ports for
# kubectl port-forward, default 18443 / 18181). Needs kubectl, curl, base64 and od.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TIMEOUT="${E2E_TIMEOUT:-180}"
API_PORT="${E2E_API_PORT:-18443}"
OPA_PORT="${E2E_OPA_PORT:-18181}"
OPERATOR_NS=acl-system
NS=shop
RULE=team-documents
CONNECTOR=storefront
BUNDLE=storefront-policies
API_KEY_SECRET=e2e-api-key
SERVICE_HOST="acl-operator.${OPERATOR_NS}.svc"

KUBECTL=(kubectl)
if [[ -n "${KUBE_CONTEXT:-}" ]]; then KUBECTL+=(--context "$KUBE_CONTEXT"); fi

WORK="$(mktemp -d)"
PIDS=()
OPA_FORWARDED=""
cleanup() {
  local pid
  for pid in ${PIDS[@]+"${PIDS[@]}"}; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

step() { printf '\n==> %s\n' "$*"; }
ok() { printf '    ok: %s\n' "$*"; }

# What was going on, printed on any failure; then exit 1.
fail() {
  printf '\nFAILED: %s\n' "$*" >&2
  {
    echo
    echo '--- kubectl get rules,connectors,bundles -n shop'
    "${KUBECTL[@]}" -n "$NS" get rules,connectors,bundles -o wide 2>&1 || true
    echo '--- pods'
    "${KUBECTL[@]}" -n "$OPERATOR_NS" get pods -o wide 2>&1 || true
    "${KUBECTL[@]}" -n "$NS" get pods -o wide 2>&1 || true
    echo '--- recent events in shop'
    "${KUBECTL[@]}" -n "$NS" get events --sort-by=.lastTimestamp 2>&1 | tail -n 15 || true
    echo '--- operator logs (last 40 lines per pod)'
    "${KUBECTL[@]}" -n "$OPERATOR_NS" logs -l app.kubernetes.io/name=acl-operator --tail=40 --prefix 2>&1 || true
    echo '--- OPA sidecar logs (last 20 lines)'
    "${KUBECTL[@]}" -n "$NS" logs deploy/storefront -c opa --tail=20 2>&1 || true
    if [[ -n "$OPA_FORWARDED" ]]; then
      echo "--- what OPA holds for bundle ${BUNDLE} (data.system.bundles)"
      curl -sS --max-time 5 "http://127.0.0.1:${OPA_PORT}/v1/data/system/bundles/${BUNDLE}" 2>&1 | head -c 2000 || true
      echo
    fi
    for f in "$WORK"/*.log; do [[ -e "$f" ]] && { echo "--- $(basename "$f")"; tail -n 5 "$f"; }; done
  } >&2
  exit 1
}

# retry <description> <command...>: runs the command every 2 s until it succeeds or TIMEOUT passes.
retry() {
  local what="$1"; shift
  local deadline=$((SECONDS + TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "timed out after ${TIMEOUT}s waiting for ${what}"
    sleep 2
  done
}

# port_forward <name> <resource> <local>:<remote> <namespace>: a background kubectl port-forward,
# stopped on exit; returns once it listens.
port_forward() {
  local name="$1" resource="$2" ports="$3" ns="$4" log="$WORK/port-forward-$1.log"
  "${KUBECTL[@]}" -n "$ns" port-forward "$resource" "$ports" >"$log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  local deadline=$((SECONDS + 30))
  until grep -q 'Forwarding from' "$log"; do
    kill -0 "$pid" 2>/dev/null || fail "kubectl port-forward $resource $ports exited: $(cat "$log") (another process on local port ${ports%%:*}? set E2E_API_PORT / E2E_OPA_PORT)"
    ((SECONDS < deadline)) || fail "kubectl port-forward $resource $ports did not start within 30s"
    sleep 1
  done
}

# ---------------------------------------------------------------------------------------------------
step "Checking the operator runs (context: ${KUBE_CONTEXT:-current})"
for tool in kubectl curl base64 od; do
  command -v "$tool" >/dev/null || fail "$tool is not on PATH"
done
"${KUBECTL[@]}" -n "$OPERATOR_NS" get deploy/acl-operator >/dev/null 2>&1 \
  || fail "no Deployment acl-operator in ${OPERATOR_NS}: run 'make kind-up' first"
"${KUBECTL[@]}" -n "$OPERATOR_NS" rollout status deploy/acl-operator --timeout="${TIMEOUT}s" \
  || fail "the operator's Deployment did not become ready"
ok "deploy/acl-operator is rolled out"

step "Applying deploy/examples/opa-sidecar.yaml"
"${KUBECTL[@]}" apply -f "$ROOT/deploy/examples/opa-sidecar.yaml" || fail "kubectl apply of the example failed"
# A run that failed half-way may have left the edit of step 5 in place, which apply does not undo.
"${KUBECTL[@]}" -n "$NS" patch "rule/$RULE" --type=merge -p '{"spec":{"actions":["read"]}}' >/dev/null \
  || fail "could not reset rule/$RULE"

step "Waiting for the Rule, Connector and Bundle to be Ready"
retry "the Rule, Connector and Bundle to exist" \
  "${KUBECTL[@]}" -n "$NS" get "rule/$RULE" "connector/$CONNECTOR" "bundle/$BUNDLE"
"${KUBECTL[@]}" -n "$NS" wait --for=condition=Ready --timeout="${TIMEOUT}s" \
  "rule/$RULE" "connector/$CONNECTOR" "bundle/$BUNDLE" \
  || fail "the Rule, Connector and Bundle did not all become Ready (see their conditions below)"
"${KUBECTL[@]}" -n "$NS" get rules,connectors,bundles || true

step "Waiting for the token Secret ${CONNECTOR}-token and the storefront pod"
retry "Secret ${NS}/${CONNECTOR}-token (created by the operator)" \
  "${KUBECTL[@]}" -n "$NS" get secret "${CONNECTOR}-token"
ca_b64="$("${KUBECTL[@]}" -n "$NS" get secret "${CONNECTOR}-token" -o jsonpath='{.data.ca\.crt}')" \
  || fail "could not read Secret ${CONNECTOR}-token"
[[ -n "$ca_b64" ]] || fail "Secret ${CONNECTOR}-token has no ca.crt: OPA could not trust the operator's certificate"
printf '%s' "$ca_b64" | base64 -d >"$WORK/ca.crt" || fail "ca.crt in Secret ${CONNECTOR}-token is not base64"
ok "Secret ${CONNECTOR}-token holds token and ca.crt"
"${KUBECTL[@]}" -n "$NS" rollout status deploy/storefront --timeout="${TIMEOUT}s" \
  || fail "the storefront pod did not become ready: its OPA has not activated bundle ${BUNDLE}"
ok "OPA reports every bundle activated (/health?bundles)"

step "Asking the operator for decisions (POST /authorization over HTTPS)"
api_key="e2e-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
"${KUBECTL[@]}" apply -f - >/dev/null <<EOF || fail "could not create the API key Secret"
apiVersion: v1
kind: Secret
metadata:
  name: ${API_KEY_SECRET}
  namespace: ${NS}
  labels:
    acl.policyagent.dev/api-key: "true"
stringData:
  token: ${api_key}
EOF
# The key goes to curl in a file, not on its command line (where ps would show it).
printf 'Authorization: Bearer %s\n' "$api_key" >"$WORK/authorization.header"
port_forward api svc/acl-operator "${API_PORT}:8443" "$OPERATOR_NS"

# decide <team of the principal> <action>: the operator's decision, "allow" or "deny".
decide() {
  local body
  body="$(printf '{"subject":{"type":"user","id":"alice","properties":{"team":"%s"}},"action":"%s","resource":{"type":"document","id":"d1","properties":{"team":"blue"}}}' "$1" "$2")"
  curl -sS --fail --max-time 10 --cacert "$WORK/ca.crt" \
    --resolve "${SERVICE_HOST}:${API_PORT}:127.0.0.1" \
    -H @"$WORK/authorization.header" -H 'Content-Type: application/json' \
    -d "$body" "https://${SERVICE_HOST}:${API_PORT}/authorization" \
    | sed -n 's/.*"decision":"\([a-z]*\)".*/\1/p'
}
expect_decision() {
  local want="$1" team="$2" action="$3"
  [[ "$(decide "$team" "$action")" == "$want" ]]
}
# The operator learns of the new API key through its watch: retry until it accepts it.
retry "the operator to answer allow for alice (team blue) reading a blue document" expect_decision allow blue read
ok "alice (team blue) may read a blue document: allow"
expect_decision deny red read || fail "expected deny for alice (team red) reading a blue document, got '$(decide red read)'"
ok "alice (team red) may not read a blue document: deny"

step "Comparing the bundle revision OPA activated with the Bundle's status"
port_forward opa deploy/storefront "${OPA_PORT}:8181" "$NS"
OPA_FORWARDED=1

status_revision() { "${KUBECTL[@]}" -n "$NS" get "bundle/$BUNDLE" -o jsonpath='{.status.revision}'; }
# OPA keeps every activated bundle's manifest under data.system.bundles.<name>.
opa_revision() {
  curl -sS --fail --max-time 5 "http://127.0.0.1:${OPA_PORT}/v1/data/system/bundles/${BUNDLE}/manifest/revision" \
    | sed -n 's/.*"result":"\([^"]*\)".*/\1/p'
}
# opa_allows <team> <action>: "true" or "false", as the application in the pod would ask.
opa_allows() {
  local body
  body="$(printf '{"input":{"principal":{"type":"user","id":"alice","team":"%s"},"action":"%s","resource":{"type":"document","id":"d1","team":"blue"},"context":{}}}' "$1" "$2")"
  curl -sS --fail --max-time 5 -d "$body" "http://127.0.0.1:${OPA_PORT}/v1/data/acl/allow" \
    | sed -nE 's/.*"result":(true|false).*/\1/p'
}
opa_at_status_revision() { [[ -n "$(status_revision)" && "$(opa_revision)" == "$(status_revision)" ]]; }
opa_answers() { [[ "$(opa_allows "$2" "$3")" == "$1" ]]; }

retry "OPA to activate revision $(status_revision) of ${BUNDLE}" opa_at_status_revision
revision="$(status_revision)"
ok "OPA runs revision ${revision} = Bundle status.revision ${revision}"
opa_answers true blue read || fail "OPA should allow alice (team blue) to read, as the operator does"
opa_answers false red read || fail "OPA should deny alice (team red), as the operator does"
ok "OPA decides as the operator: allow (blue), deny (red)"

step "Editing the Rule: actions [read, write]; OPA must get the new revision"
"${KUBECTL[@]}" -n "$NS" patch "rule/$RULE" --type=merge -p '{"spec":{"actions":["read","write"]}}' >/dev/null \
  || fail "could not patch rule/$RULE"
new_revision() { local r; r="$(status_revision)"; [[ -n "$r" && "$r" -gt "$revision" ]]; }
retry "Bundle ${BUNDLE} to move past revision ${revision}" new_revision
edited="$(status_revision)"
retry "OPA to activate revision ${edited}" opa_at_status_revision
retry "OPA to allow write with revision ${edited}" opa_answers true blue write
retry "the operator to allow write" expect_decision allow blue write
ok "revision ${revision} -> ${edited}: operator and OPA both allow write"

step "Waiting for the rollout as a pipeline would: kubectl wait --for=condition=RolledOut"
# The sidecar's status reports say which revision it runs; the Bundle's RolledOut turns True once
# every sidecar heard from runs the revision served, and AGENTS counts them.
"${KUBECTL[@]}" -n "$NS" wait --for=condition=RolledOut "bundle/$BUNDLE" --timeout=120s >/dev/null \
  || fail "RolledOut never turned True: $("${KUBECTL[@]}" -n "$NS" get "bundle/$BUNDLE" -o jsonpath='{.status.conditions[?(@.type=="RolledOut")].message}')"
agents="$("${KUBECTL[@]}" -n "$NS" get "bundle/$BUNDLE" -o jsonpath='{.status.agents.rollout}')"
[[ "$agents" == "1/1" ]] || fail "expected AGENTS 1/1 (the storefront sidecar), got '${agents}'"
ok "RolledOut True, AGENTS ${agents}: the sidecar runs revision ${edited}"

step "Restoring the Rule (actions [read])"
"${KUBECTL[@]}" -n "$NS" patch "rule/$RULE" --type=merge -p '{"spec":{"actions":["read"]}}' >/dev/null \
  || fail "could not restore rule/$RULE"
revision="$edited"
retry "Bundle ${BUNDLE} to move past revision ${revision}" new_revision
retry "OPA to activate revision $(status_revision)" opa_at_status_revision
retry "OPA to deny write again" opa_answers false blue write
ok "revision $(status_revision): write denied again"

"${KUBECTL[@]}" -n "$NS" delete secret "$API_KEY_SECRET" --ignore-not-found >/dev/null || true

printf '\nPASSED: operator decisions, token Secret with ca.crt, OPA sidecar on revision %s, rule edits reach OPA, RolledOut.\n' "$(status_revision)"
printf 'The example stays in namespace %s; remove it with: kubectl delete -f deploy/examples/opa-sidecar.yaml\n' "$NS"
