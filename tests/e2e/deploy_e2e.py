#!/usr/bin/env python3
"""Deployment files (docs/deployment.md): deploy/kubernetes/ validated offline against the
Kubernetes schemas (kubernetes-validate, whose package ships them), cross-checked against the real
binary (probe routes answer, the HPA's metric is exported) and each other (ports, grace period,
threads); and the Dockerfile kept in step with scripts/setup (docker cannot run here): its build stage runs
scripts/setup on Debian 12 with the files install-deps needs copied first, and its runtime stage
installs the Debian package of every shared library the built binary links.

    python3 tests/e2e/deploy_e2e.py --binary build/release/s1serve --venv build/release/deploy-venv
"""
import argparse
import http.client
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
import s1harness as h  # noqa: E402
from checklist import Checklist  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANIFESTS = os.path.join(REPO, "deploy", "kubernetes")
KUBERNETES_VERSION = "1.30.0"  # the oldest minor still supported upstream when this was written
# In every debian:12-slim image, needed by dpkg or apt themselves: never listed.
BASE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g", "libzstd1", "liblzma5", "libbz2-1.0"}


def validator(venv):
    """The validator's path, installing it into `venv` from the pinned requirements when missing."""
    tool = os.path.join(venv, "bin", "kubernetes-validate")
    requirements = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deploy-requirements.txt")
    stamp = os.path.join(venv, "requirements.txt")
    wanted = open(requirements).read()
    if not (os.path.exists(tool) and os.path.exists(stamp) and open(stamp).read() == wanted):
        subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--disable-pip-version-check", "-q",
                        "-r", requirements], check=True)
        with open(stamp, "w") as f:
            f.write(wanted)
    return tool


def validate(tool, paths):
    # A proxy that refuses everything: the schemas must come from the package, not the network.
    env = dict(os.environ, HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9",
               http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9", NO_PROXY="", no_proxy="")
    return subprocess.run([tool, "--strict", "--no-warn", "-k", KUBERNETES_VERSION, *paths],
                          capture_output=True, text=True, env=env)


def load_yaml(venv, path):
    python = os.path.join(venv, "bin", "python")
    code = "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))"
    return json.loads(subprocess.run([python, "-c", code, path], capture_output=True, text=True, check=True).stdout)


def get(port, path):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read().decode()
    connection.close()
    return response.status, body


def check_manifests(binary, venv, check):
    tool = validator(venv)
    paths = sorted(os.path.join(MANIFESTS, name) for name in os.listdir(MANIFESTS) if name.endswith(".yaml"))
    run = validate(tool, paths)
    check(f"{len(paths)} manifests valid against the Kubernetes {KUBERNETES_VERSION} schemas, offline",
          len(paths) >= 3 and run.returncode == 0, run.stdout + run.stderr)
    documents = {}
    for path in paths:
        for document in load_yaml(venv, path):
            documents[document["kind"]] = document
    check("a Deployment, a Service and a HorizontalPodAutoscaler",
          {"Deployment", "Service", "HorizontalPodAutoscaler"} <= set(documents), sorted(documents))

    with tempfile.TemporaryDirectory() as workdir:
        broken = os.path.join(workdir, "broken.yaml")
        with open(os.path.join(MANIFESTS, "deployment.yaml")) as f:
            text = f.read()
        with open(broken, "w") as f:
            f.write(text.replace("readinessProbe:", "readinesProbe:", 1))
        run = validate(tool, [broken])
        check("the validator refuses a misspelt field (the check can fail)", run.returncode != 0, run.stdout)

    pod = documents["Deployment"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = container["args"]
    port = int(args[args.index("--port") + 1])
    check("the container port is the one s1serve listens on", container["ports"][0]["containerPort"] == port,
          container["ports"])
    service_target = documents["Service"]["spec"]["ports"][0]["targetPort"]
    check("the Service targets the container's port", service_target in (port, container["ports"][0]["name"]),
          service_target)
    drain_s = int(args[args.index("--drain-ms") + 1]) / 1000
    pre_stop = container["lifecycle"]["preStop"]["exec"]["command"]
    pre_stop_s = float(pre_stop[-1]) if pre_stop[0] == "sleep" else 0
    check("the grace period covers preStop and the drain", pod["terminationGracePeriodSeconds"] > pre_stop_s + drain_s,
          (pod["terminationGracePeriodSeconds"], pre_stop_s, drain_s))
    threads = [e["value"] for e in container["env"] if e["name"] == "OMP_NUM_THREADS"]
    check("OpenMP threads match the CPU request", threads == [str(container["resources"]["requests"]["cpu"])],
          (threads, container["resources"]))

    server = h.Server(binary, ["--model", "mock:ramp", "--port", "0"], name="deploy").start()
    local_port = server.port
    try:
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            path = container[probe]["httpGet"]["path"]
            status, body = get(local_port, path)
            check(f"the {probe} path {path} answers 200 on a warm server", status == 200, (status, body))
        metric = documents["HorizontalPodAutoscaler"]["spec"]["metrics"][0]["pods"]["metric"]["name"]
        status, body = get(local_port, "/metrics")
        check(f"the HPA's metric {metric} is exported on /metrics",
              status == 200 and re.search(rf"(?m)^{metric}(\{{[^}}]*\}})? ", body), body[-500:])
    finally:
        server.stop()


def dockerfile_stages(path):
    """[(base image, stage name, [(instruction, argument)])] of a Dockerfile, continuations joined."""
    stages = []
    with open(path) as f:
        text = re.sub(r"\\\n", " ", f.read())
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, argument = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":
            words = argument.split()
            stages.append((words[0], words[2] if len(words) > 2 else None, []))
        else:
            stages[-1][2].append((instruction, argument.strip()))
    return stages


def scripts_used(name, seen=None):
    """scripts/NAME and every file of scripts/ it names, transitively."""
    seen = set() if seen is None else seen
    if name in seen:
        return seen
    seen.add(name)
    text = open(os.path.join(REPO, "scripts", name)).read()
    # Named as a path: ".../fetch-onednn", "$repo/scripts/onednn-requirements.txt".
    for other in os.listdir(os.path.join(REPO, "scripts")):
        if other != name and os.path.isfile(os.path.join(REPO, "scripts", other)) and re.search(
                rf"/{re.escape(other)}(?![\w.-])", text):
            scripts_used(other, seen)
    return seen


def linked_packages(binary):
    """The Debian packages of the shared libraries `binary` links, and the libraries no package owns."""
    run = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True)
    packages, unowned = set(), []
    for path in re.findall(r"=> (/\S+)", run.stdout):
        real = os.path.realpath(path)
        owner = None
        for candidate in (path, real, "/usr" + path if not path.startswith("/usr") else path[4:]):
            query = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
            if query.returncode == 0:
                owner = query.stdout.split(":")[0]
                break
        if owner:
            packages.add(owner)
        else:
            unowned.append(real)
    return packages, unowned


def check_dockerfile(binary, check):
    stages = dockerfile_stages(os.path.join(REPO, "Dockerfile"))
    check("two stages, both Debian 12 (the system scripts/install-deps targets)",
          len(stages) == 2 and all(re.fullmatch(r"debian:12(-slim)?", stage[0]) for stage in stages), stages)
    build, runtime = stages[0], stages[-1]
    steps = build[2]
    runs = [argument for instruction, argument in steps if instruction == "RUN"]
    check("the build stage runs scripts/setup, the README's build", "scripts/setup" in runs, runs)
    workdir = next((a for i, a in steps if i == "WORKDIR"), "/")
    # Everything scripts/install-deps runs is copied before it runs (its layer is cached apart).
    first_install = next((k for k, (i, a) in enumerate(steps) if i == "RUN" and "scripts/install-deps" in a), None)
    copied = set()
    for instruction, argument in steps[:first_install]:
        if instruction == "COPY":
            copied.update(os.path.basename(word) for word in shlex.split(argument)[:-1])
    needed = scripts_used("install-deps")
    check("install-deps runs with every script and file it uses copied", first_install is not None
          and needed <= copied, (sorted(needed), sorted(copied)))
    setup = open(os.path.join(REPO, "scripts", "setup")).read()
    build_dir = re.search(r"-B (\S+)", setup).group(1)
    models = next((a.split("=", 1)[1] for i, a in steps if i == "ENV" and a.startswith("S1SERVE_MODELS=")), None)
    check("the default model goes where the runtime stage takes it from",
          models is not None and "S1SERVE_MODELS" in open(os.path.join(REPO, "scripts", "fetch-default-model")).read()
          and f"ENV S1SERVE_MODELS={models}" in [f"{i} {a}" for i, a in runtime[2]], models)
    sources = [shlex.split(a)[-2] for i, a in runtime[2] if i == "COPY" and a.startswith(f"--from={build[1]}")]
    check("the runtime stage takes the binary scripts/setup builds and the model",
          os.path.join(workdir, build_dir, "s1serve") in sources and models in sources, sources)

    installs = " ".join(a for i, a in runtime[2] if i == "RUN" and "apt-get install" in a)
    listed = {w for w in installs.split() if re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", w)} - {
        "apt-get", "install", "update", "rm", "rf", "&&"}
    packages, unowned = linked_packages(binary)
    missing = packages - BASE_PACKAGES - listed
    check("the runtime stage installs the package of every library the binary links", not missing,
          f"missing {sorted(missing)}")
    stale = {p for p in listed if p.startswith("lib")} - packages
    check("and no library package it does not link", not stale, f"not linked: {sorted(stale)}")
    onednn = os.path.realpath(os.path.join(REPO, ".deps", "onednn", "lib"))
    copied_libraries = {os.path.basename(shlex.split(a)[-2]) for i, a in runtime[2] if i == "COPY"}
    check("the libraries no Debian package owns (oneDNN) are copied from the build stage",
          all(path.startswith(onednn) and os.path.basename(path) in copied_libraries for path in unowned),
          (unowned, sorted(copied_libraries)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--venv", required=True)
    args = parser.parse_args()
    check = Checklist()
    check_dockerfile(args.binary, check)
    check_manifests(args.binary, args.venv, check)
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
