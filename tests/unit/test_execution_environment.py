"""meta/execution-environment.yml: the EE AWX runs the collection in agrees with the repository.

The pins it names are the ones the tests run with (requirements-dev.txt), the ones the lab runs
(lab/versions.yaml), and every download it makes is checked against a sha256 it names.
"""

import os
import re

import pytest
import yaml
from conftest import REPO

EE_FILE = os.path.join(REPO, "meta", "execution-environment.yml")


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def dev_pins():
    pins = {}
    with open(os.path.join(REPO, "requirements-dev.txt")) as handle:
        for line in handle:
            match = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line.strip())
            if match:
                pins[match.group(1).lower()] = match.group(2)
    return pins


@pytest.fixture(scope="module")
def ee():
    return load(EE_FILE)


def build_args(ee):
    args = {}
    for step in ee["additional_build_steps"]["append_final"]:
        match = re.match(r"^ARG (\w+)=(\S+)$", step)
        if match:
            args[match.group(1)] = match.group(2)
    return args


def test_ee_is_schema_3_with_a_named_base_image(ee):
    assert ee["version"] == 3
    assert ee["images"]["base_image"]["name"]
    assert ee["dependencies"]["python_interpreter"]["python_path"].endswith("python3.11")


@pytest.mark.parametrize("package", ["ansible_core", "ansible_runner"])
def test_ee_pins_agree_with_requirements_dev(ee, package):
    name = package.replace("_", "-")
    assert ee["dependencies"][package]["package_pip"] == "%s==%s" % (name, dev_pins()[name])


def test_ee_dependency_files_are_the_collections(ee):
    here = os.path.dirname(EE_FILE)
    for key, expected in (("python", "requirements.txt"), ("system", "bindep.txt")):
        path = os.path.normpath(os.path.join(here, ee["dependencies"][key]))
        assert path == os.path.join(REPO, expected)
        assert os.path.isfile(path)


def test_ee_collections_cover_galaxy_dependencies(ee):
    wanted = load(os.path.join(REPO, "galaxy.yml"))["dependencies"]
    named = {c["name"]: c["version"] for c in ee["dependencies"]["galaxy"]["collections"]}
    assert set(wanted) <= set(named)
    for name, version in named.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), "%s is not pinned: %s" % (name, version)


def test_ee_helm_and_kubectl_are_the_labs_versions_with_checksums(ee):
    args = build_args(ee)
    versions = load(os.path.join(REPO, "lab", "versions.yaml"))
    assert args["HELM_VERSION"] == versions["helm"]["version"]
    assert args["KUBECTL_VERSION"] == versions["kubernetes"]["version"]
    for name in ("HELM_SHA256", "KUBECTL_SHA256"):
        assert re.fullmatch(r"[0-9a-f]{64}", args[name]), name
    steps = "\n".join(ee["additional_build_steps"]["append_final"])
    # Each download is checked before it is installed.
    for tool in ("HELM", "KUBECTL"):
        assert '"${%s_SHA256}' % tool in steps
    assert steps.count("sha256sum --check --strict") == 2
