"""Certificates and keys for the lab, generated at `up` with openssl, never committed."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .config import LabConfig, LabError

DAYS = "30"


@dataclass(frozen=True)
class Cert:
    """One leaf certificate: file stem, subject and what it may be used for."""

    name: str
    cn: str
    org: str = ""
    sans: tuple[str, ...] = ()
    server: bool = False
    client: bool = True


def certs(cfg: LabConfig) -> list[Cert]:
    net = cfg.network
    api_sans = (
        f"IP:{net.node_ip}",
        "IP:127.0.0.1",
        f"IP:{net.kubernetes_service_ip}",
        "DNS:localhost",
        "DNS:kubernetes",
        "DNS:kubernetes.default",
        "DNS:kubernetes.default.svc",
        "DNS:kubernetes.default.svc.cluster.local",
    )
    node = cfg.node_name
    return [
        Cert("etcd-server", "etcd", sans=("IP:127.0.0.1", "DNS:localhost"), server=True),
        Cert("apiserver-etcd-client", "kube-apiserver-etcd-client"),
        Cert("apiserver", "kube-apiserver", sans=api_sans, server=True, client=False),
        Cert("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"),
        Cert("admin", "kubernetes-admin", "system:masters"),
        Cert("controller-manager", "system:kube-controller-manager"),
        Cert("scheduler", "system:kube-scheduler"),
        Cert("kube-proxy", "system:kube-proxy"),
        Cert("kubelet-client", f"system:node:{node}", "system:nodes"),
        Cert(
            "kubelet-server",
            f"system:node:{node}",
            "system:nodes",
            sans=(f"IP:{net.node_ip}", f"DNS:{node}"),
            server=True,
            client=False,
        ),
        Cert("kwok", "kwok-controller", "system:masters"),
    ]


def _openssl(*args: str) -> None:
    proc = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise LabError(f"Failed to run openssl {args[0]}: {proc.stderr.strip()}")


def _key(path: Path) -> None:
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(path))
    path.chmod(0o600)


def generate(cfg: LabConfig, pki_dir: Path) -> None:
    """Create the CA, every leaf in certs(), and the service-account key pair; skip what exists."""
    pki_dir.mkdir(parents=True, exist_ok=True)
    pki_dir.chmod(0o700)
    ca_key, ca_crt = pki_dir / "ca.key", pki_dir / "ca.crt"
    if not ca_crt.exists():
        _key(ca_key)
        _openssl(
            "req", "-x509", "-new", "-key", str(ca_key), "-out", str(ca_crt), "-days", DAYS,
            "-subj", f"/CN=kaiops-lab-{cfg.name}-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
        )  # fmt: skip
    for cert in certs(cfg):
        crt = pki_dir / f"{cert.name}.crt"
        if crt.exists():
            continue
        key, csr, ext = (pki_dir / f"{cert.name}.{s}" for s in ("key", "csr", "ext"))
        _key(key)
        subj = f"/CN={cert.cn}" + (f"/O={cert.org}" if cert.org else "")
        _openssl("req", "-new", "-key", str(key), "-out", str(csr), "-subj", subj)
        usages = [u for u, on in (("serverAuth", cert.server), ("clientAuth", cert.client)) if on]
        lines = [
            "basicConstraints=critical,CA:FALSE",
            "keyUsage=critical,digitalSignature,keyEncipherment",
            "extendedKeyUsage=" + ",".join(usages),
        ]
        if cert.sans:
            lines.append("subjectAltName=" + ",".join(cert.sans))
        ext.write_text("\n".join(lines) + "\n")
        _openssl(
            "x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key),
            "-CAcreateserial", "-out", str(crt), "-days", DAYS, "-extfile", str(ext),
        )  # fmt: skip
        csr.unlink()
        ext.unlink()
    sa_key = pki_dir / "sa.key"
    if not sa_key.exists():
        _openssl("genrsa", "-out", str(sa_key), "2048")
        sa_key.chmod(0o600)
        _openssl("rsa", "-in", str(sa_key), "-pubout", "-out", str(pki_dir / "sa.pub"))


def kubeconfig(cfg: LabConfig, pki_dir: Path, user: str, server: str | None = None) -> str:
    """A kubeconfig for one of the leaf certificates, with paths (not inline keys)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": f"kaiops-lab-{cfg.name}",
                "cluster": {
                    "server": server or cfg.api_url,
                    "certificate-authority": str(pki_dir / "ca.crt"),
                },
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate": str(pki_dir / f"{user}.crt"),
                    "client-key": str(pki_dir / f"{user}.key"),
                },
            }
        ],
        "contexts": [
            {
                "name": f"kaiops-lab-{cfg.name}",
                "context": {"cluster": f"kaiops-lab-{cfg.name}", "user": user},
            }
        ],
        "current-context": f"kaiops-lab-{cfg.name}",
    }
    return json.dumps(doc, indent=2) + "\n"
