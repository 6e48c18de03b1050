#!/usr/bin/env bash
# The change window on an up lab, as `make drill` runs it (after make lab-up): inventory,
# reproduce, the rollback rehearsed (rollout.yml to patched, rollback.yml back), the damage the
# pre-patch build leaves, recovery.yml on that damage, rollout.yml to patched. Each step is timed;
# the report's place and its decision are printed whatever the verdict. Exit 0 when approved.
#
# A script rather than a make recipe (issue 20) so that it can be read, linted and tested: the
# Makefile hands it what it knows through the environment, and tests/unit/hack/test_drill.py
# runs it against stand-ins for ansible-playbook, the lab and kubectl.
#
# Environment (make drill sets all but the optional ones):
#   VENV              the Python virtualenv: its bin/ first on PATH, its ansible-config
#   PY                the venv's python, reads report.json and ansible-config's output
#   LAB_PY            the python that runs the lab library (lab/kailab): `env` and `kai versions`
#   ANSIBLE_PLAYBOOK  the ansible-playbook to run
#   KAI_VERSION       the release the lab installed: pre (default), patched, none or a tag
#   DRILL_ARGS        optional, shell words added to every playbook, e.g.
#                     -e '{"kaiops_kai_chart_ref": "<dir>/kai-scheduler-{version}.tgz"}'
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Recovery runs on the pre-patch build, whose binder retries each failed bind and can wait up to
# its reservation allocation timeout (40 s) first, so the window is at least that and a retry (it
# ends as soon as nothing is pending).
DRILL_RECOVERY_FLOOR_S=60
# Recovery's documented steps on the drill's own leftovers (the planted namespace only).
DRILL_RECOVERY_STEPS='["delete_failed_bindrequests", "delete_dataless_configmaps", "delete_orphan_configmaps"]'

# The timing table, one line per step, printed at the end (or when the rehearsal fails).
times=""

# A missing input is named with its fix, before anything runs.
require_inputs() {
  local var
  for var in VENV PY LAB_PY ANSIBLE_PLAYBOOK; do
    if [[ -z "${!var:-}" ]]; then
      echo "hack/drill.sh: $var is not set: run it through make drill, which sets it" >&2
      exit 2
    fi
  done
}

# The lab's exports (KUBECONFIG, the venv, kubectl and helm first on PATH) and the installed
# version pair (pre=<v> patched=<v>, from meta/kai_releases.yml). A failure leaves them unset,
# as the recipe did: the steps then fail on their own, with their own message.
lab_env() {
  eval "$(PYTHONPATH="$ROOT/lab" "$LAB_PY" -m kailab env)"
  pre="" patched=""
  eval "$(PYTHONPATH="$ROOT/lab" "$LAB_PY" -m kailab.kai versions 2>/dev/null)"
}

# The release the lab installed (KAI_VERSION, default pre) as a version: the rollback target.
installed_version() {
  case "${KAI_VERSION:-}" in
    "" | pre) echo "$pre" ;;
    patched) echo "$patched" ;;
    none) echo "" ;;
    *) echo "$KAI_VERSION" ;;
  esac
}

# The evidence root option (ansible.cfg [kaiops_evidence] root, read back with ansible-config;
# relative to the folder of ansible.cfg), so the report's place is printed whatever the verdict.
evidence_root() {
  local root
  root=$(PATH="$VENV/bin:$PATH" VIRTUAL_ENV="$VENV" "$VENV/bin/ansible-config" dump -t callback \
    kaiops.runbooks.evidence --format json 2>/dev/null |
    "$PY" -c 'import json,sys; print(next(o["value"] for d in json.load(sys.stdin) for v in d.values() for o in v if o["name"] == "root"))') || true
  case "$root" in
    /*) echo "$root" ;;
    *) echo "$ROOT/$root" ;;
  esac
}

# The bundle evidence/latest points at: the run that just ended (empty when there is none).
latest() {
  readlink -f "$EVIDENCE/latest" || true
}

# ansible-playbook with the venv first on PATH and DRILL_ARGS last, as every step runs it.
# shellcheck disable=SC2329 # called through step, which shellcheck does not follow
ap() {
  PATH="$VENV/bin:$PATH" VIRTUAL_ENV="$VENV" "$ANSIBLE_PLAYBOOK" "$@" "${drill_args[@]}"
}

# step NAME TITLE COMMAND...: announce, run, add a line to the timing table; its exit status.
step() {
  local name=$1 title=$2 started=$SECONDS rc=0
  shift 2
  echo
  echo "== drill: $title"
  "$@" || rc=$?
  times+="$(printf '%-28s %4ss exit %s' "$name" $((SECONDS - started)) "$rc")"$'\n'
  return "$rc"
}

# -e kaiops_kai_version=<patched> -e kaiops_rollout_rollback_target=<installed>, each only when known.
rollout_vars() {
  rollout_args=()
  if [[ -n "$patched" ]]; then rollout_args+=(-e "kaiops_kai_version=$patched"); fi
  if [[ -n "$installed" ]]; then rollout_args+=(-e "kaiops_rollout_rollback_target=$installed"); fi
}

# The planted nil-data namespace reproduce kept (the newest), empty when none.
damaged_namespace() {
  kubectl get ns -l kaiops.dev/created-by=reproduce,kaiops.dev/reproduce-case=nil_data \
    --sort-by=.metadata.creationTimestamp -o jsonpath='{.items[-1:].metadata.name}' 2>/dev/null || true
}

# The rollout verification's submit-to-Running p95 over the clusters of a report (0 when none).
rollout_p95() {
  "$PY" -c 'import json,sys; c=json.load(open(sys.argv[1]))["clusters"]; print(max([((x.get("change") or {}).get("figures") or {}).get("verify", {}).get("submit_to_running", {}).get("p95_s") or 0 for x in c.values()] or [0]))' "$1/report.json" 2>/dev/null || echo 0
}

# Recovery's documented steps on the planted namespace, its window from the rehearsal's forward
# rollout's p95; then the namespace is deleted, and gone before the rollout's probes start.
recover() {
  local damaged=$1 p95=$2 report=$3
  step recovery "recovery.yml on $damaged (window from the rehearsal rollout's submit-to-Running p95 ${p95}s)" \
    ap playbooks/recovery.yml \
    -e "{\"kaiops_recovery_steps\": $DRILL_RECOVERY_STEPS, \"kai_recovery_min_age_s\": 0, \"kai_recovery_window_multiplier\": 10, \"kai_recovery_window_floor_s\": $DRILL_RECOVERY_FLOOR_S}" \
    -e "{\"kai_recovery_namespaces\": [\"$damaged\"], \"kai_recovery_window_baseline_s\": ${p95:-0}, \"kai_recovery_window_baseline_source\": \"rollout verification p95, $(basename "$report")\"}" ||
    true
  recovery="$(latest)"
  kubectl delete namespace "$damaged" --wait=true --timeout=120s >/dev/null 2>&1 || true
}

main() {
  require_inputs
  cd "$ROOT"
  # DRILL_ARGS is shell text (quotes included), as it was inside the make recipe.
  drill_args=()
  eval "drill_args=(${DRILL_ARGS:-})"
  lab_env
  installed="$(installed_version)"
  EVIDENCE="$(evidence_root)"
  local t0=$SECONDS rc=0 rrc=0 forward rehearsal report damaged decision
  recovery=""
  rollout_vars

  # The read-only inventory (the pre-patch build exposed) and reproduce (the regression evidence
  # the rollout requires): either failing ends the drill with its exit status.
  step inventory "inventory (read-only): is the pre-patch build exposed?" ap playbooks/inventory.yml || exit $?
  step reproduce "reproduce: the regression evidence for $patched" ap playbooks/reproduce.yml || exit $?

  # The rollback rehearsal an approval needs: rollout.yml to patched (not_approved without a
  # rehearsal on record: expected; it leaves the lab on patched), then rollback.yml from that
  # bundle back to the installed release, verified. A failed rehearsal ends the drill.
  step rehearse-forward "rehearsal, forward: rollout.yml to $patched (not approved without a rehearsal on record: expected)" \
    ap rollout.yml "${rollout_args[@]}" || true
  forward="$(latest)"
  step rehearse-back "rehearsal, back: rollback.yml from $(basename "$forward") to ${installed:-the release before}, verified" \
    ap playbooks/rollback.yml -e "kaiops_rollout_rollback_bundle=$forward" || rrc=$?
  rehearsal="$(latest)"
  if [[ $rrc != 0 ]]; then
    echo
    printf '%s' "$times"
    echo "rehearsal: $rehearsal/report.md"
    echo "the rollback rehearsal did not end verified (exit $rrc): no rollout without it"
    exit "$rrc"
  fi

  # Damage the pre-patch build leaves (reproduce's nil-data case, its namespace kept), remediated
  # on that build as docs/change-window.md says, before the rollout to patched (upgrade, verify,
  # on a failed gate roll back; approved on the rehearsal). Not after: an upgrade over binds that
  # keep failing has KAI's new binder retry them at once, before its admission webhook serves;
  # the refused retries can put a GPU past 1.0 (lab/kai-standin/CONTRACT.md, "Retried binds
  # during a switch of build: one GPU given 1.5"; a cold make test, 2026-12-07).
  step damage "the damage the pre-patch build leaves (nil-data case, namespace kept)" ap playbooks/reproduce.yml \
    -e '{"kaiops_reproduce_cases": ["nil_data"], "kaiops_reproduce_builds": ["pre"], "kaiops_reproduce_install": false, "kaiops_reproduce_keep_namespaces": true}' ||
    true
  damaged="$(damaged_namespace)"
  if [[ -n "$damaged" ]]; then
    recover "$damaged" "$(rollout_p95 "$forward")" "$forward"
  fi
  step rollout "rollout.yml to $patched" ap rollout.yml "${rollout_args[@]}" || rc=$?
  report="$(latest)"

  decision=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["decision"])' "$report/report.json" 2>/dev/null || echo unknown)
  echo
  printf '%s' "$times"
  echo "drill end to end: $((SECONDS - t0)) s (after lab-up)"
  echo "rehearsal: $rehearsal/report.md"
  if [[ -n "$recovery" ]]; then echo "recovery: $recovery/recovery.md"; fi
  echo "report: $report/report.md"
  echo "decision: $decision (rollout exit status $rc)"
  if [[ "$decision" == approved ]]; then exit 0; fi
  exit $((rc ? rc : 2))
}

main "$@"
