"""Fixtures for tests against the running lab (`make lab-up` first; `make test` does)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "lab"))

from kailab.cluster import Lab  # noqa: E402
from kailab.config import LabConfig  # noqa: E402


class Kube:
    """kubectl of the lab, bound to its admin kubeconfig."""

    def __init__(self, lab: Lab):
        self.lab = lab
        self.bin = str(lab.binaries()["kubectl"])
        self.kubeconfig = str(lab.cfg.kubeconfig)

    def __call__(
        self, *args: str, input_text: str | None = None, check: bool = True, timeout: float = 180
    ) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [self.bin, f"--kubeconfig={self.kubeconfig}", *args],
            input=input_text, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    def json(self, *args: str) -> dict:
        return json.loads(self(*args, "-o", "json").stdout)

    def apply(self, *docs: dict, namespace: str | None = None) -> None:
        ns = ["-n", namespace] if namespace else []
        self("apply", *ns, "-f", "-", input_text="\n---\n".join(json.dumps(d) for d in docs))


@pytest.fixture(scope="session")
def lab() -> Lab:
    # KAIOPS_LAB_CLUSTER: make test runs this suite on cluster 2 of its lab, beside the drills
    lab = Lab(LabConfig.selected(), log=lambda _m: None)
    if not lab.cfg.kubeconfig.exists():
        pytest.fail("the lab is not up: run `make lab-up` (make test does it for you)")
    return lab


@pytest.fixture(scope="session")
def kube(lab: Lab) -> Kube:
    return Kube(lab)


@pytest.fixture()
def namespace(kube: Kube):
    name = f"labtest-{uuid.uuid4().hex[:6]}"
    kube("create", "namespace", name)
    kube("wait", "--for=create", "serviceaccount/default", "-n", name, "--timeout=60s")
    yield name
    kube("delete", "namespace", name, "--wait=false", check=False)
