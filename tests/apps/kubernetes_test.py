#!/usr/bin/env python3
"""The Kubernetes manifests (deploy/kubernetes) and the container recipe
(deploy/container/Dockerfile), checked offline: no API server, so no schema
validation by kubectl. Each manifest is parsed, its objects' kinds and
fields are checked against the part of the API schema they use (an unknown
field, a typo, fails), and the references between them are followed: the
Job's subdomain is the headless Service, the Service selects the Job's pods,
the world size equals the Job's completions, the Secret holds every file the
command names, the monitoring Service points Prometheus at --monitor's
port. Then every pod's command runs through troupe launch --explain with
the environment Kubernetes would give that pod: each gets its rank and the
same coordinator. The Dockerfile starts from Debian 12 and installs with
apt-get only, and its runtime stage has every library troupe links.

   kubernetes_test.py TROUPE SOURCE_DIR     (exit 77: no PyYAML)
"""

import json
import os
import re
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("SKIP: no PyYAML (Debian: python3-yaml)", file=sys.stderr)
    sys.exit(77)

TROUPE, SOURCE = sys.argv[1], sys.argv[2]
DEPLOY = os.path.join(SOURCE, "deploy")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)
    return ok


# The API's fields that the manifests may use, per object path: a field
# outside these is a typo or a field troupe does not rely on (extend with
# care; names from the Kubernetes 1.28 API reference).
ALLOWED = {
    "object": {"apiVersion", "kind", "metadata", "spec", "type",
               "stringData", "data", "resources"},
    "metadata": {"name", "labels", "annotations", "namespace"},
    "Service.spec": {"clusterIP", "publishNotReadyAddresses", "selector",
                     "ports", "type"},
    "Service.port": {"name", "port", "targetPort", "protocol"},
    "Job.spec": {"completionMode", "completions", "parallelism",
                 "backoffLimit", "template", "ttlSecondsAfterFinished",
                 "activeDeadlineSeconds"},
    "PodTemplate": {"metadata", "spec"},
    "Pod.spec": {"subdomain", "restartPolicy", "containers", "volumes",
                 "hostname", "terminationGracePeriodSeconds",
                 "securityContext"},
    "Container": {"name", "image", "imagePullPolicy", "command", "args",
                  "env", "ports", "resources", "volumeMounts",
                  "securityContext"},
    "EnvVar": {"name", "value", "valueFrom"},
    "ContainerPort": {"name", "containerPort", "protocol"},
    "VolumeMount": {"name", "mountPath", "readOnly", "subPath"},
    "Volume": {"name", "secret", "persistentVolumeClaim", "emptyDir"},
    "PVC.spec": {"accessModes", "resources", "storageClassName"},
}
KINDS = {("v1", "Service"), ("v1", "Secret"),
         ("v1", "PersistentVolumeClaim"), ("batch/v1", "Job"),
         ("kustomize.config.k8s.io/v1beta1", "Kustomization")}


def fields(obj, allowed, where):
    if not check(isinstance(obj, dict), where + " is not a mapping"):
        return
    extra = set(obj) - ALLOWED[allowed]
    check(not extra, "%s: fields outside the schema used: %s"
          % (where, sorted(extra)))


def load(name):
    with open(os.path.join(DEPLOY, "kubernetes", name)) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


docs = {}
for name in sorted(os.listdir(os.path.join(DEPLOY, "kubernetes"))):
    if name.endswith(".yaml"):
        docs[name] = load(name)
objects = [o for name in docs for o in docs[name]]
for o in objects:
    kind = (o.get("apiVersion"), o.get("kind"))
    check(kind in KINDS, "unknown kind %s" % (kind,))
    fields(o, "object", o.get("kind", "?"))
    if o.get("kind") != "Kustomization":
        fields(o.get("metadata"), "metadata", o["kind"] + ".metadata")
        check(re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?",
                           o["metadata"].get("name", "")) is not None,
              "%s: name is not a DNS label" % o["kind"])

kust = docs["kustomization.yaml"][0]
for r in kust["resources"]:
    check(r in docs, "kustomization lists %s, which is not here" % r)
by_kind = {}
for o in objects:
    by_kind.setdefault(o["kind"], []).append(o)
services = {s["metadata"]["name"]: s for s in by_kind["Service"]}
(job,) = by_kind["Job"]
(secret,) = by_kind["Secret"]
(pvc,) = by_kind["PersistentVolumeClaim"]

spec = job["spec"]
fields(spec, "Job.spec", "Job.spec")
fields(spec["template"], "PodTemplate", "Job.spec.template")
pod = spec["template"]["spec"]
fields(pod, "Pod.spec", "the pod spec")
check(spec["completionMode"] == "Indexed", "the Job is not Indexed")
n = spec["completions"]
check(spec["parallelism"] == n, "parallelism differs from completions: "
      "every rank must run at once")
check(pod["restartPolicy"] == "OnFailure",
      "a failed pod must restart in place (OnFailure)")
(container,) = pod["containers"]
fields(container, "Container", "the container")
for e in container["env"]:
    fields(e, "EnvVar", "an env entry")
for p in container["ports"]:
    fields(p, "ContainerPort", "a container port")
for m in container["volumeMounts"]:
    fields(m, "VolumeMount", "a volume mount")
for v in pod["volumes"]:
    fields(v, "Volume", "a volume")
fields(pvc["spec"], "PVC.spec", "the claim")
env = {e["name"]: e["value"] for e in container["env"]}
check(int(env["TROUPE_WORLD_SIZE"]) == n,
      "TROUPE_WORLD_SIZE %s is not the Job's %d completions"
      % (env["TROUPE_WORLD_SIZE"], n))

# The headless Service names the pods.
headless = services.get(pod.get("subdomain"))
if check(headless is not None, "the pod's subdomain names no Service"):
    fields(headless["spec"], "Service.spec", "the headless Service")
    check(headless["spec"]["clusterIP"] == "None", "the Service is not "
          "headless (clusterIP: None)")
    check(headless["spec"].get("publishNotReadyAddresses") is True,
          "pod names must resolve before readiness")
    check(env.get("TROUPE_SERVICE") == headless["metadata"]["name"],
          "TROUPE_SERVICE is not the headless Service")
    labels = spec["template"]["metadata"]["labels"]
    for k, v in headless["spec"]["selector"].items():
        check(labels.get(k) == v, "the Service selects %s=%s, which the "
              "pods lack" % (k, v))
    ports = {p["name"]: p for p in headless["spec"]["ports"]}
    for p in headless["spec"]["ports"]:
        fields(p, "Service.port", "a Service port")
    check(ports["coordinator"]["port"] == 7400, "coordinator port")

command = container["command"]
check(command[:3] == ["troupe", "launch", "--launcher=kubernetes"],
      "the command is not troupe launch --launcher=kubernetes")
flags = dict(a[2:].split("=", 1) for a in command[3:] if "=" in a)

# Every file the command reads from the Secret's mount is a key of it.
mounts = {m["name"]: m for m in container["volumeMounts"]}
volumes = {v["name"]: v for v in pod["volumes"]}
secret_volume = [v for v in pod["volumes"] if "secret" in v][0]
check(secret_volume["secret"]["secretName"] == secret["metadata"]["name"],
      "the secret volume mounts another Secret")
secret_dir = mounts[secret_volume["name"]]["mountPath"]
check(mounts[secret_volume["name"]].get("readOnly") is True,
      "the Secret is mounted writable")
keys = set(secret.get("stringData", {})) | set(secret.get("data", {}))
for flag in ("token-file", "tls-ca", "tls-cert", "tls-key"):
    path = flags.get(flag, "")
    if check(path.startswith(secret_dir + "/"),
             "--%s is not read from the Secret" % flag):
        check(path[len(secret_dir) + 1:] in keys,
              "--%s=%s is no key of the Secret" % (flag, path))

# The results volume is the claim, where the checkpoints and report go.
results = [v for v in pod["volumes"] if "persistentVolumeClaim" in v][0]
check(results["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"],
      "the results volume is not the claim")
check("ReadWriteMany" in pvc["spec"]["accessModes"],
      "every pod mounts the claim: ReadWriteMany")
results_dir = mounts[results["name"]]["mountPath"]
for flag in ("checkpoint-dir", "report"):
    check(flags.get(flag, "").startswith(results_dir + "/"),
          "--%s is not on the results volume" % flag)

# Prometheus scrapes rank 0's --monitor port.
monitor = services.get("troupe-monitor")
if check(monitor is not None, "no monitoring Service"):
    ann = monitor["metadata"]["annotations"]
    port = flags["monitor"].rsplit(":", 1)[1]
    check(ann.get("prometheus.io/scrape") == "true", "not scraped")
    check(ann.get("prometheus.io/port") == port,
          "scrape port %s is not --monitor's %s"
          % (ann.get("prometheus.io/port"), port))
    check(ann.get("prometheus.io/path") == "/metrics", "scrape path")
    check(monitor["spec"]["ports"][0]["targetPort"] == int(port),
          "the Service's target port is not --monitor's")
    check(monitor["spec"]["selector"].get(
        "batch.kubernetes.io/job-completion-index") == "0",
        "the monitoring Service must select rank 0's pod only")
    check(int(port) in [p["containerPort"] for p in container["ports"]],
          "the container does not declare the monitoring port")

# Each pod's place, as troupe computes it from what Kubernetes gives it.
job_name = job["metadata"]["name"]
for index in range(n):
    pod_env = dict(os.environ)
    for k in list(pod_env):
        if k.startswith(("SLURM_", "OMPI_", "PMI_", "TROUPE_")):
            del pod_env[k]
    pod_env.update(env)
    pod_env.update({"KUBERNETES_SERVICE_HOST": "10.96.0.1",
                    "JOB_COMPLETION_INDEX": str(index),
                    "HOSTNAME": "%s-%d" % (job_name, index)})
    run = subprocess.run([TROUPE] + command[1:] + ["--explain"],
                         env=pod_env, capture_output=True, text=True,
                         timeout=60)
    if not check(run.returncode == 0, "pod %d: troupe launch --explain "
                 "exited %d: %s" % (index, run.returncode, run.stderr)):
        continue
    place = json.loads(run.stdout.strip().splitlines()[-1])
    print("pod %d: %s" % (index, run.stdout.splitlines()[1]))
    check(place["rank"] == index, "pod %d got rank %s" % (index,
                                                         place["rank"]))
    check(place["world_size"] == n, "pod %d: world size" % index)
    check(place["coordinator"] == "%s-0.%s:7400" % (job_name,
                                                    env["TROUPE_SERVICE"]),
          "pod %d: coordinator %s" % (index, place["coordinator"]))
    check(place["role"] == ("coordinator" if index == 0 else "node"),
          "pod %d: role %s" % (index, place["role"]))

# The container recipe: Debian 12 and its packages, nothing downloaded.
with open(os.path.join(DEPLOY, "container", "Dockerfile")) as f:
    recipe = f.read()
logical = re.sub(r"\\\n", " ", recipe)
for line in logical.splitlines():
    line = line.strip()
    if line.startswith("FROM "):
        check(re.match(r"FROM debian:12(-slim)?( AS \w+)?$", line)
              is not None, "not a Debian 12 base: " + line)
    if line.startswith("RUN "):
        for tool in ("curl", "wget", "pip", "git clone", "npm", "ADD http"):
            check(tool not in line, "the recipe downloads with %s" % tool)
stages = logical.split("FROM ")[1:]
runtime = stages[-1]
installed = set()
for m in re.finditer(r"apt-get install[^&]*", runtime):
    installed |= set(w for w in m.group(0).split() if not w.startswith("-"))
check("-DTROUPE_NATIVE=OFF" in logical,
      "the image must not be built for the build host's CPU only")
# The packages of the libraries troupe links (but libtorch's, which the
# image leaves out, and the C and C++ runtimes every image has).
ldd = subprocess.run(["ldd", TROUPE], capture_output=True, text=True).stdout
for lib in re.findall(r"=> (\S+)", ldd):
    if not re.search(r"libcaf|libspdlog|libprometheus|libssl|libz\.", lib):
        continue
    owner = subprocess.run(["dpkg", "-S", os.path.realpath(lib)],
                           capture_output=True, text=True).stdout
    pkg = owner.split(":")[0]
    if pkg:
        check(pkg in installed, "the image lacks %s (%s)" % (pkg, lib))
check("dataset-fashion-mnist" in installed, "no data set in the image")

if failures:
    print("%d check(s) failed" % len(failures), file=sys.stderr)
    sys.exit(1)
print("PASS: the manifests and the recipe", file=sys.stderr)
