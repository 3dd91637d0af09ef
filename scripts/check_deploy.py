#!/usr/bin/env python3
"""Checks deploy/ against the flowkit binary, since Docker and Kubernetes do not run here.

    scripts/check_deploy.py .build/debug/flowkit

* every YAML file parses (compose, Kubernetes manifests);
* every flag passed to flowkit in compose, the manifests and the systemd units exists in
  `flowkit <subcommand> --help`;
* the ports a process binds (from its flags or the config it reads) are the ports its container,
  Service or compose entry exposes;
* every key of the example configs is documented in deploy/CONFIG.md;
* the Grafana dashboard parses, and every metric it queries is one the binary registers.

Exits 1 with a list of problems, 0 when everything holds.
"""

import json
import pathlib
import re
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
problems = []


def flowkit_flags(binary, subcommand, cache={}):
    if subcommand not in cache:
        text = subprocess.run([binary, subcommand, "--help"], capture_output=True, text=True).stdout
        cache[subcommand] = set(re.findall(r"(--[a-z][a-z0-9-]*)", text))
        if not cache[subcommand]:
            problems.append("flowkit %s --help printed no flags" % subcommand)
    return cache[subcommand]


def check_arguments(binary, where, arguments):
    """arguments: the list after the binary, starting with the subcommand."""
    if not arguments:
        problems.append("%s: no flowkit subcommand" % where)
        return {}
    subcommand, flags = arguments[0], {}
    known = flowkit_flags(binary, subcommand)
    index = 1
    while index < len(arguments):
        argument = arguments[index]
        if argument.startswith("--"):
            name, _, value = argument.partition("=")
            if not value and index + 1 < len(arguments) and not arguments[index + 1].startswith("--"):
                value = arguments[index + 1]
                index += 1
            if name not in known:
                problems.append("%s: flowkit %s has no flag %s" % (where, subcommand, name))
            flags[name] = value
        index += 1
    return flags


def port_of(endpoint):
    match = re.search(r":(\d+)$", endpoint or "")
    return int(match.group(1)) if match else None


def bound_ports(subcommand, flags, config):
    section = config.get(subcommand, {}) if config else {}

    def setting(key):
        return flags.get("--" + key) or section.get(key)

    if subcommand == "coordinator":
        submit = port_of(setting("submit")) or 7400
        publish = port_of(setting("publish")) or submit + 1
        sync = port_of(setting("sync")) or submit + 2
        ports = {submit, publish, sync}
    elif subcommand == "node":
        ports = {port_of(setting("client"))} - {None}
    else:
        ports = set()
    metrics = setting("metrics")
    if metrics:
        ports.add(port_of(metrics))
    return ports


def check_compose(binary):
    path = DEPLOY / "docker" / "compose.yaml"
    compose = yaml.safe_load(path.read_text())
    for name, service in compose["services"].items():
        flags = check_arguments(binary, "compose %s" % name, service["command"])
        exposed = {int(str(mapping).split(":")[-1]) for mapping in service.get("ports", [])}
        bound = bound_ports(service["command"][0], flags, None)
        if service["command"][0] == "node":
            bound -= {port_of(flags.get("--metrics"))}   # metrics need not be published per node
        missing = bound - exposed
        if missing:
            problems.append("compose %s binds %s but does not publish %s" % (name, sorted(bound), sorted(missing)))


def check_kubernetes(binary):
    config = None
    documents = []
    for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                documents.append((path.name, document))
    for name, document in documents:
        if document["kind"] == "ConfigMap":
            config = json.loads(document["data"]["flowkit.json"])
    services = {doc["metadata"]["name"]: doc for _, doc in documents if doc["kind"] == "Service"}
    for name, document in documents:
        if document["kind"] not in ("StatefulSet", "Deployment"):
            continue
        for container in document["spec"]["template"]["spec"]["containers"]:
            where = "%s %s" % (name, container["name"])
            flags = check_arguments(binary, where, container["args"])
            subcommand = container["args"][0]
            container_ports = {port["containerPort"] for port in container.get("ports", [])}
            bound = bound_ports(subcommand, flags, config)
            if bound - container_ports:
                problems.append("%s binds %s but declares containerPorts %s" % (where, sorted(bound), sorted(container_ports)))
            labels = document["spec"]["template"]["metadata"]["labels"]
            matching = [s for s in services.values() if all(labels.get(k) == v for k, v in s["spec"]["selector"].items())]
            if not matching:
                problems.append("%s: no Service selects it" % where)
            for service in matching:
                targets = {port["targetPort"] for port in service["spec"]["ports"]}
                if bound - targets:
                    problems.append("%s: Service %s does not target %s" % (where, service["metadata"]["name"], sorted(bound - targets)))
    node_coordinator = (config or {}).get("node", {}).get("coordinator", "")
    if "flowkit-coordinator" not in node_coordinator:
        problems.append("the nodes' config does not point at the flowkit-coordinator Service")


def check_systemd(binary):
    for path in sorted((DEPLOY / "systemd").glob("*.service")):
        for line in path.read_text().splitlines():
            if line.startswith("ExecStart="):
                words = line[len("ExecStart="):].split()
                arguments = [word.replace("%i", "1") for word in words[1:]]
                check_arguments(binary, path.name, arguments)


def check_config_documented():
    documented = set(re.findall(r"^\| `([a-z-]+)`", (DEPLOY / "CONFIG.md").read_text(), re.MULTILINE))
    documented |= {key.strip("`") for key in re.findall(r"`([a-z-]+)`, `([a-z-]+)`", (DEPLOY / "CONFIG.md").read_text()) for key in key}
    configs = [json.loads((DEPLOY / "flowkit.json").read_text())]
    for path in (DEPLOY / "kubernetes").glob("*.yaml"):
        for document in yaml.safe_load_all(path.read_text()):
            if document and document.get("kind") == "ConfigMap":
                configs.append(json.loads(document["data"]["flowkit.json"]))
    for config in configs:
        for key, value in config.items():
            keys = value.keys() if isinstance(value, dict) else [key]
            for inner in keys:
                if inner not in documented:
                    problems.append("config key %s is not documented in deploy/CONFIG.md" % inner)


def check_grafana(binary):
    """Every flowkit_* metric the dashboard's queries name is a metric label in the binary."""
    path = DEPLOY / "grafana" / "flowkit-dashboard.json"
    try:
        dashboard = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        problems.append("%s: %s" % (path.relative_to(ROOT), error))
        return
    known = set(m.decode() for m in re.findall(rb"flowkit_[a-z_]+", pathlib.Path(binary).read_bytes()))
    for panel in dashboard.get("panels", []):
        for target in panel.get("targets", []):
            for metric in re.findall(r"flowkit_[a-z_]+", target.get("expr", "")):
                base = re.sub(r"_(bucket|sum|count)$", "", metric)
                if metric not in known and base not in known:
                    problems.append("grafana panel %r queries %s, which flowkit does not serve" % (panel.get("title"), metric))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    check_compose(binary)
    check_kubernetes(binary)
    check_systemd(binary)
    check_config_documented()
    check_grafana(binary)
    for problem in problems:
        print("deploy: " + problem)
    print("deploy/ checked: %s" % ("%d problem(s)" % len(problems) if problems else "compose, manifests, units, config and the Grafana dashboard agree with flowkit"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
