"""The Helm chart (deploy/helm/tstriton) and the KServe manifests (deploy/kserve): the chart lints, renders every
value set of its ci/ folder, and what it renders validates against Kubernetes' own schemas (strict: an unknown
field is an error) with kubeconform, the ServiceMonitor against the Prometheus operator's CRD and the KServe
manifests against KServe's CRDs (test/deploy/schemas). The chart's refusals (a grace period shorter than the
drain, ...) are tried, and the server is started with the arguments the chart gives it.

Tools: helm and kubeconform on the PATH, the Python packages kubernetes-validate (Kubernetes' JSON schemas,
offline), jsonschema and PyYAML; scripts/install-deploy-tools.sh installs them. Without them the tests skip,
except under CI, where they fail."""
import json
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from deploy_support import ROOT, start_server, stop_server

try:
    import yaml
except ImportError:  # reported by the autouse fixture below
    yaml = None
try:
    import jsonschema
except ImportError:
    jsonschema = None

CHART = ROOT / "deploy" / "helm" / "tstriton"
CI_VALUES = CHART / "ci"
KSERVE = ROOT / "deploy" / "kserve"
SCHEMAS = ROOT / "test" / "deploy" / "schemas"
BIN = Path(os.environ.get("DEPLOY_TOOLS_BIN", "/usr/local/bin"))

# Kubernetes versions every value set is validated against: the oldest the chart supports (Chart.yaml
# kubeVersion) and the newest kubernetes-validate bundles. A value set that needs a newer cluster names its own.
OLDEST, NEWEST = "1.30.0", "1.37.0"
VALUE_SETS = {
    "default-values.yaml": (OLDEST, NEWEST),
    "gpu-hpa-monitoring-values.yaml": (OLDEST, NEWEST),
    "tls-apikey-values.yaml": (OLDEST, NEWEST),
    "pvc-values.yaml": (OLDEST, NEWEST),
    "configmap-values.yaml": (OLDEST, NEWEST),
    "model-image-volume-values.yaml": ("1.33.0", NEWEST),  # image volumes with subPath
}
KIND_SUFFIX = "{{ .ResourceKind }}{{ .KindSuffix }}.json"


def missing(what, how="bash scripts/install-deploy-tools.sh"):
    message = f"{what} is not there ({how})"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(autouse=True)
def python_packages():
    if yaml is None:
        missing("the Python package PyYAML")
    if jsonschema is None:
        missing("the Python package jsonschema")


def tool(name):
    found = shutil.which(name) or (str(BIN / name) if (BIN / name).exists() else None)
    if not found:
        missing(name)
    return found


def run(args, ok=True, **kwargs):
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, **kwargs)
    if ok and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def helm_template(*extra, kube_version=NEWEST, ok=True):
    return run([tool("helm"), "template", "t", str(CHART), "--namespace", "serving",
                "--kube-version", kube_version, *extra], ok=ok)


def render(values_file=None, *extra, kube_version=NEWEST):
    args = (["-f", str(CI_VALUES / values_file)] if values_file else []) + list(extra)
    text = helm_template(*args, kube_version=kube_version).stdout
    return text, [doc for doc in yaml.safe_load_all(text) if doc]


def by_kind(docs, kind):
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {[d['kind'] for d in docs]}"
    return found[0]


def pod_spec(docs):
    return by_kind(docs, "Deployment")["spec"]["template"]["spec"]


def server_container(deployment):
    spec = deployment["spec"]["template"]["spec"] if "spec" in deployment else deployment
    return next(c for c in spec["containers"] if c["name"] == "tstriton")


def flag(args, name):
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    assert len(values) == 1, f"--{name} in {args}"
    return values[0]


# --- the validators ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def kube_schemas(tmp_path_factory):
    """Per Kubernetes version, a folder of kubernetes-validate's strict schemas in the form kubeconform loads: the
    package's files refer to their shared definitions by the URL https://kubernetes.io/api/_definitions.json (its
    own Python validator registers that URL); here each refers to the file beside it."""
    try:
        import kubernetes_validate
    except ImportError:
        missing("the Python package kubernetes-validate")
    bundled = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    out = tmp_path_factory.mktemp("kubernetes-json-schema")
    versions = {}
    for version in sorted({v for pair in VALUE_SETS.values() for v in pair}):
        source = bundled / f"v{version}-local-strict"
        assert source.is_dir(), f"kubernetes-validate {kubernetes_validate.__version__} has no schemas for {version}"
        target = out / f"v{version}"
        target.mkdir()
        for path in source.glob("*.json"):
            schema = json.loads(path.read_text())
            schema.pop("$id", None)
            text = json.dumps(schema).replace('"/api/_definitions.json#', '"_definitions.json#')
            (target / path.name).write_text(text)
        versions[version] = target
    return versions


def kubeconform(kube_schemas, version, text):
    """Validates the YAML stream `text`; returns kubeconform's summary and its per-resource results."""
    proc = run([tool("kubeconform"), "-strict", "-summary", "-verbose", "-output", "json",
                "-schema-location", str(kube_schemas[version] / KIND_SUFFIX),
                "-schema-location", str(SCHEMAS / KIND_SUFFIX), "-"], ok=False, input=text)
    report = json.loads(proc.stdout)
    summary = report["summary"]
    assert proc.returncode == (0 if summary["invalid"] + summary["errors"] == 0 else 1), proc.stderr
    return summary, report["resources"]


def crd_validator(name):
    schema = json.loads((SCHEMAS / name).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


# --- helm lint, render, validate ---------------------------------------------------------------------------------

@pytest.mark.parametrize("values_file", [None, *VALUE_SETS])
def test_helm_lint_strict(values_file):
    args = [tool("helm"), "lint", "--strict", str(CHART), "--kube-version", NEWEST]
    if values_file:
        args += ["-f", str(CI_VALUES / values_file)]
    proc = run(args)
    assert "1 chart(s) linted, 0 chart(s) failed" in proc.stdout + proc.stderr


@pytest.mark.parametrize("values_file", list(VALUE_SETS))
def test_rendered_chart_validates_against_kubernetes_schemas(kube_schemas, values_file):
    for version in VALUE_SETS[values_file]:
        text, docs = render(values_file, kube_version=version)
        summary, resources = kubeconform(kube_schemas, version, text)
        problems = [r for r in resources if r["status"] != "statusValid"]
        assert problems == [], f"{values_file} on Kubernetes {version}: {problems}"
        assert summary == {"valid": len(docs), "invalid": 0, "errors": 0, "skipped": 0}, summary
        print(f"{values_file} on {version}: {summary}")


def test_validator_rejects_what_kubernetes_would_reject(kube_schemas):
    """The validation can fail: an unknown field, a wrong type, a ServiceMonitor field the CRD lacks."""
    text, docs = render("gpu-hpa-monitoring-values.yaml")
    deployment = by_kind(docs, "Deployment")
    server_container(deployment)["livenessProbe"]["httpGet"]["pathh"] = "/v2/health/live"
    service = by_kind(docs, "Service")
    service["spec"]["ports"][0]["port"] = "eight thousand"
    monitor = by_kind(docs, "ServiceMonitor")
    monitor["spec"]["endpoints"][0]["scrapeEveryWhile"] = "10s"
    broken = "\n---\n".join(yaml.safe_dump(d) for d in (deployment, service, monitor))
    summary, resources = kubeconform(kube_schemas, NEWEST, broken)
    assert summary["invalid"] == 3 and summary["valid"] == 0, resources
    messages = json.dumps(resources)
    assert "pathh" in messages and "scrapeEveryWhile" in messages


# --- what the chart renders ---------------------------------------------------------------------------------------

def test_defaults_render_a_drained_probed_locked_down_server():
    _, docs = render("default-values.yaml")
    assert sorted(d["kind"] for d in docs) == ["Deployment", "Service", "ServiceAccount"]
    deployment = by_kind(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = server_container(deployment)
    args = container["args"]
    assert args[:2] == ["serve", "--model-repository=/models"]
    exit_timeout = int(flag(args, "exit-timeout-secs"))
    assert exit_timeout == 30
    sleep = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pod["terminationGracePeriodSeconds"] > exit_timeout + sleep + 5
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": 1}
    assert container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert container["startupProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"http": 8000, "grpc": 8001, "metrics": 8002}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] and security["runAsNonRoot"]
    assert security["capabilities"]["drop"] == ["ALL"] and not security["allowPrivilegeEscalation"]
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    service = by_kind(docs, "Service")
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    assert ports["grpc"]["appProtocol"] == "grpc" and ports["http"]["port"] == 8000 and ports["metrics"]["port"] == 8002
    assert "nvidia.com/gpu" not in json.dumps(deployment)
    assert "env" not in container and "gpu-execution-provider" not in json.dumps(container["args"])


def test_gpu_hpa_monitoring_values():
    _, docs = render("gpu-hpa-monitoring-values.yaml")
    deployment = by_kind(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = server_container(deployment)
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    # The Dockerfile's gpu target (WebGPU's loaders), its provider, and the driver's Vulkan ICD mounted and found.
    assert container["image"] == "registry.example.com/tstriton:0.1.0-gpu"
    assert flag(container["args"], "gpu-execution-provider") == "webgpu"
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {"NVIDIA_DRIVER_CAPABILITIES": "compute,utility,graphics",
                   "VK_DRIVER_FILES": "/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"} and pod["runtimeClassName"] == "nvidia"
    assert "replicas" not in deployment["spec"]  # the HorizontalPodAutoscaler owns the count
    assert pod["terminationGracePeriodSeconds"] > int(flag(container["args"], "exit-timeout-secs")) == 60
    shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"
    init = pod["initContainers"][0]
    assert init["image"] == "registry.example.com/models/resnet:2024-06"
    assert init["volumeMounts"][0]["name"] == "model-repository"
    hpa = by_kind(docs, "HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["metrics"] == [{"type": "Pods", "pods": {
        "metric": {"name": "nv_inference_queue_duration_us_per_second"},
        "target": {"type": "AverageValue", "averageValue": "500k"}}}]
    monitor = by_kind(docs, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics" and monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    assert by_kind(docs, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1


def test_tls_and_api_key_values():
    _, docs = render("tls-apikey-values.yaml")
    deployment = by_kind(docs, "Deployment")
    container = server_container(deployment)
    args = container["args"]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["scheme"] == "HTTPS"
    assert flag(args, "http-use-ssl") == "true" and flag(args, "grpc-use-ssl-mutual") == "true"
    assert flag(args, "http-server-cert") == "/etc/tstriton/tls/tls.crt"
    assert flag(args, "grpc-root-cert") == "/etc/tstriton/tls/ca.crt"
    tls = next(v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls")
    assert tls["secret"]["secretName"] == "tstriton-tls"
    groups = "model-repository,logging,trace,shared-memory,statistics"
    assert flag(args, "http-restricted-api") == f"{groups}:admin-key=$(RESTRICTED_API_KEY)"
    assert flag(args, "grpc-restricted-protocol") == f"{groups}:admin-key=$(RESTRICTED_API_KEY)"
    env = {e["name"]: e for e in container["env"]}
    assert env["RESTRICTED_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "tstriton-admin", "key": "api-key"}
    assert args[-2:] == ["--model-control-mode=explicit", "--load-model=*"]


def test_repository_sources():
    _, docs = render("pvc-values.yaml")
    pod = pod_spec(docs)
    mount = next(m for m in server_container(pod)["volumeMounts"]
                 if m["name"] == "model-repository")
    assert mount == {"name": "model-repository", "mountPath": "/models", "readOnly": True, "subPath": "triton/models"}
    volume = next(v for v in pod["volumes"] if v["name"] == "model-repository")
    assert volume["persistentVolumeClaim"] == {"claimName": "model-store", "readOnly": True}
    assert pod["terminationGracePeriodSeconds"] == 120

    _, docs = render("configmap-values.yaml")
    config_map = by_kind(docs, "ConfigMap")
    assert sorted(config_map["data"]) == ["echo_1_model.js", "echo_config.pbtxt"]
    pod = pod_spec(docs)
    volume = next(v for v in pod["volumes"] if v["name"] == "model-repository")
    assert volume["configMap"]["items"] == [{"key": "echo_1_model.js", "path": "echo/1/model.js"},
                                            {"key": "echo_config.pbtxt", "path": "echo/config.pbtxt"}]

    _, docs = render("model-image-volume-values.yaml", kube_version="1.33.0")
    pod = pod_spec(docs)
    volume = next(v for v in pod["volumes"] if v["name"] == "model-repository")
    assert volume["image"]["reference"] == "registry.example.com/models/resnet:2024-06"
    assert "initContainers" not in pod
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "model-repository")
    assert mount["subPath"] == "models"


@pytest.mark.parametrize("args,kube_version,message", [
    (["--set", "terminationGracePeriodSeconds=20"], NEWEST,
     "terminationGracePeriodSeconds (20) must be at least exitTimeoutSeconds (30) + preStopSleepSeconds (5) + 5 s"),
    (["--set", "exitTimeoutSeconds=100", "--set", "terminationGracePeriodSeconds=100"], NEWEST,
     "terminationGracePeriodSeconds (100) must be at least exitTimeoutSeconds (100)"),
    (["--set", "modelRepository.source=pvc"], NEWEST, "modelRepository.source pvc needs modelRepository.pvc.claimName"),
    (["--set", "modelRepository.source=s3"], NEWEST, "modelRepository.source must be image, pvc or configMap"),
    (["--set", "modelRepository.source=configMap"], NEWEST, "modelRepository.source configMap needs"),
    (["-f", str(CI_VALUES / "model-image-volume-values.yaml")], "1.32.0", "needs image volumes with subPath"),
    (["--set", "tls.grpc.enabled=true"], NEWEST, "need tls.secretName"),
    (["--set", "tls.secretName=s", "--set", "tls.http.enabled=true", "--set", "tls.http.mutual=true"], NEWEST,
     "probes cannot present a client certificate"),
    (["--set", "apiKey.secretName=k", "--set", "apiKey.httpApis={health,logging}"], NEWEST,
     "apiKey.httpApis must not contain health"),
    (["--set", "apiKey.secretName=k", "--set", "apiKey.header=bad header"], NEWEST, "is not a valid HTTP header name"),
    (["--set", "autoscaling.enabled=true", "--set", "autoscaling.targetCPUUtilizationPercentage=null"], NEWEST,
     "autoscaling.enabled needs a metric"),
    (["--set", "podDisruptionBudget.enabled=true", "--set", "podDisruptionBudget.minAvailable=1"], NEWEST,
     "set minAvailable or maxUnavailable, not both"),
    (["--set", "gpu.enabled=true", "--set", "gpu.executionProvider=vulkan"], NEWEST,
     'gpu.executionProvider must be auto, cuda or webgpu (or empty), not "vulkan"'),
    ([], "1.29.0", "incompatible with Kubernetes"),
])
def test_chart_refuses(args, kube_version, message):
    proc = helm_template(*args, kube_version=kube_version, ok=False)
    assert proc.returncode != 0, proc.stdout
    assert message in proc.stderr, proc.stderr


def test_grace_period_set_high_enough_renders():
    _, docs = render(None, "--set", "terminationGracePeriodSeconds=40")
    assert by_kind(docs, "Deployment")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 40


def test_docs_list_every_value():
    """docs/deploy.md's values table names every value of values.yaml (Kubernetes objects passed through whole, like
    `resources`, count as one value), and no value that is not there."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    whole = {"strategy", "resources", "podSecurityContext", "securityContext"}

    def paths(node, prefix=""):
        for key, value in node.items():
            path = prefix + key
            if isinstance(value, dict) and value and path not in whole:
                yield from paths(value, path + ".")
            else:
                yield path

    docs = (ROOT / "docs" / "deploy.md").read_text()
    section = docs[docs.index("## Helm chart"):docs.index("## KServe")]
    table = set(re.findall(r"^\| `([A-Za-z.]+)` \|", section, re.M))
    assert table == set(paths(values))


# --- the server takes the chart's arguments ----------------------------------------------------------------------

def http(method, url, headers=None, body=None):
    request = urllib.request.Request(url, method=method, headers=headers or {}, data=body)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_server_runs_with_the_charts_arguments(tmp_path):
    """The configMap repository and the API key of the ci/ value sets, as the pod would run them: the ConfigMap's
    files laid out by the volume's items, the arguments with Kubernetes' $(VAR) expansion done."""
    cli = ROOT / "dist" / "lib" / "cli" / "main.js"
    if not cli.exists():
        missing("the built server", "npm run build")
    _, docs = render("configmap-values.yaml", "-f", str(CI_VALUES / "tls-apikey-values.yaml"),
                     "--set", "tls.http.enabled=false", "--set", "tls.grpc.enabled=false",
                     "--set", "tls.grpc.mutual=false")
    config_map = by_kind(docs, "ConfigMap")
    pod = pod_spec(docs)
    items = next(v for v in pod["volumes"] if v["name"] == "model-repository")["configMap"]["items"]
    for item in items:
        (tmp_path / item["path"]).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / item["path"]).write_text(config_map["data"][item["key"]])
    key = "k3y-from-the-secret"
    args = []
    for arg in server_container(pod)["args"]:
        arg = arg.replace("$(RESTRICTED_API_KEY)", key)
        arg = re.sub(r"^--model-repository=.*", f"--model-repository={tmp_path}", arg)
        arg = re.sub(r"^--(http|grpc|metrics)-port=.*", r"--\1-port=0", arg)
        args.append(arg)
    server = start_server(command=["node", str(cli), *args])
    try:
        base = f"http://{server.http_url}"
        assert http("GET", f"{base}/v2/health/live")[0] == 200
        assert http("GET", f"{base}/v2/health/ready")[0] == 200
        body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 3],
                                       "data": [1, 2, 3]}]}).encode()
        status, answer = http("POST", f"{base}/v2/models/echo/infer", {"Content-Type": "application/json"}, body)
        assert status == 200, answer
        assert json.loads(answer)["outputs"][0]["data"] == [1, 2, 3]
        assert http("POST", f"{base}/v2/repository/index")[0] == 403
        assert http("POST", f"{base}/v2/repository/index", {"admin-key": key})[0] == 200
        assert http("GET", f"{base}/v2/models/stats")[0] == 403
        status, metrics = http("GET", f"http://{server.metrics_url}/metrics")
        assert status == 200 and b"nv_inference_queue_duration_us" in metrics
    finally:
        assert stop_server(server) == 0, "".join(server.log)


# --- KServe -------------------------------------------------------------------------------------------------------

def load_kserve(name):
    docs = [d for d in yaml.safe_load_all((KSERVE / name).read_text()) if d]
    assert len(docs) == 1
    return docs[0]


def test_kserve_manifests_validate_against_kserve_crds(kube_schemas):
    runtime = load_kserve("cluster-serving-runtime.yaml")
    service = load_kserve("inference-service.yaml")
    for doc, schema in ((runtime, "clusterservingruntime-serving-v1alpha1.json"),
                        (service, "inferenceservice-serving-v1beta1.json")):
        errors = list(crd_validator(schema).iter_errors(doc))
        assert errors == [], [e.message for e in errors]
    text = "\n---\n".join((KSERVE / n).read_text() for n in ("cluster-serving-runtime.yaml", "inference-service.yaml"))
    summary, resources = kubeconform(kube_schemas, NEWEST, text)
    assert summary == {"valid": 2, "invalid": 0, "errors": 0, "skipped": 0}, resources


def test_kserve_runtime_follows_kserve_conventions():
    runtime = load_kserve("cluster-serving-runtime.yaml")
    service = load_kserve("inference-service.yaml")
    spec = runtime["spec"]
    formats = {f["name"]: f for f in spec["supportedModelFormats"]}
    assert set(formats) == {"onnx", "triton"} and all(f["autoSelect"] for f in formats.values())
    assert spec["protocolVersions"] == ["v2", "grpc-v2"]
    container = spec["containers"][0]
    assert container["name"] == "kserve-container"
    args = container["args"]
    assert args[0] == "serve"
    assert flag(args, "model-repository") == "/mnt/models"
    assert flag(args, "http-port") == "8080" and flag(args, "grpc-port") == "9000"
    assert flag(args, "allow-metrics") == "true" and flag(args, "metrics-port") == spec["annotations"]["prometheus.kserve.io/port"]
    model = service["spec"]["predictor"]["model"]
    assert model["modelFormat"]["name"] in formats and model["runtime"] == runtime["metadata"]["name"]
    assert model["protocolVersion"] == "v2" and model["storageUri"]
    assert service["spec"]["predictor"]["terminationGracePeriodSeconds"] > int(flag(args, "exit-timeout-secs")) + 5


def test_kserve_schemas_reject_unknown_fields():
    service = load_kserve("inference-service.yaml")
    service["spec"]["predictor"]["model"]["modelFromat"] = {"name": "onnx"}
    errors = list(crd_validator("inferenceservice-serving-v1beta1.json").iter_errors(service))
    assert any("modelFromat" in e.message for e in errors), [e.message for e in errors]
    runtime = load_kserve("cluster-serving-runtime.yaml")
    runtime["spec"]["protocolVersions"] = "v2"
    runtime["spec"]["containers"][0]["argz"] = []
    errors = list(crd_validator("clusterservingruntime-serving-v1alpha1.json").iter_errors(runtime))
    assert len(errors) == 2, [e.message for e in errors]
    runtime = load_kserve("cluster-serving-runtime.yaml")
    runtime["apiVersion"] = "serving.kserve.io/v1beta1"
    assert list(crd_validator("clusterservingruntime-serving-v1alpha1.json").iter_errors(runtime))
