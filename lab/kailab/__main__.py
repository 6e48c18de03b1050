"""Thin CLI over the lab library: flags in, one call, errors reported once (kind's habit)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .cluster import Lab
from .config import LabConfig, LabError


def _print_kai(lab: Lab) -> None:
    from .kai import describe, status

    st = status(lab)
    if not st["release"]:
        print("KAI: not installed (make lab-kai KAI_VERSION=pre)")
        return
    print(
        f"KAI: release {st['release']} revision {st['revision']} chart {st['chart']} "
        f"version {st['app_version']} ({describe(st['implementation'])}) {st['status']}"
    )
    cfg = st.get("config")
    if cfg:
        state = "current" if cfg["current"] else "not current"
        print(f"  kai-config generation {cfg['generation']} Ready {cfg['ready']} ({state})")
    else:
        print("  kai-config: none (the operator has nothing to reconcile)")
    for d in st["deployments"]:
        print(
            f"  {d['name']:<22} ready {d['ready']:<5} "
            f"{'rolled out' if d['rolled_out'] else 'rolling'}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kailab", description="The kaiops disposable lab cluster."
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build", help="build every pinned program into the cache")
    sub.add_parser("up", help="bring the lab up (converges: a second run is a no-op)")
    sub.add_parser("down", help="stop everything and restore the machine")
    st = sub.add_parser("status", help="each component: running, version, pid, ports")
    st.add_argument("--json", action="store_true")
    sub.add_parser("kubeconfig", help="print the admin kubeconfig path")
    sub.add_parser("env", help="print shell exports for eval")
    sub.add_parser("plan", help="print the component commands without running anything")
    k = sub.add_parser("kai", help="install or switch KAI on an up lab through helm")
    k.add_argument(
        "--version",
        default=os.environ.get("KAI_VERSION") or None,
        help="pre, patched or a release tag of meta/kai_releases.yml (default: pre)",
    )
    k.add_argument(
        "--bundle",
        default=os.environ.get("KAI_BUNDLE") or None,
        help="a folder with a KAI chart package and images/*.tar (real KAI)",
    )
    b = sub.add_parser("kai-bundle", help="export the stand-in as an air-gapped bundle")
    b.add_argument("dest")
    b.add_argument("--version", default=os.environ.get("KAI_VERSION") or None)
    args = parser.parse_args(argv)

    try:
        cfg = LabConfig.from_env()
        lab = Lab(
            cfg,
            log=lambda m: print(m, flush=True),
            kai_version=os.environ.get("KAI_VERSION") or None,
            kai_bundle=os.environ.get("KAI_BUNDLE") or None,
        )
        if args.cmd == "build":
            from .build import build_all

            build_all()
        elif args.cmd == "up":
            lab.up()
        elif args.cmd == "down":
            leftovers = lab.down()
            if leftovers:
                print("left behind:\n  " + "\n  ".join(leftovers), file=sys.stderr)
                return 1
        elif args.cmd == "kai":
            if not cfg.kubeconfig.exists():
                raise LabError(
                    "Failed to switch KAI: the lab is not up; start it with `make lab-up`"
                )
            lab.kai_version, lab.kai_bundle = args.version, args.bundle
            result = lab.install_kai()
            print(json.dumps(result))
        elif args.cmd == "kai-bundle":
            from .kai import export_bundle

            print(export_bundle(lab, args.version, Path(args.dest)))
        elif args.cmd == "status":
            if not cfg.state_dir.exists():
                print(f"lab {cfg.name} is not up: start it with `make lab-up`")
                return 3
            rows = lab.status()
            if args.json:
                print(json.dumps(rows, indent=2))
            else:
                for r in rows:
                    state = "running" if r["running"] else "stopped"
                    health = "healthy" if r["healthy"] else "-"
                    print(
                        f"{r['name']:<24} {state:<8} {health:<8} pid={r['pid'] or '-':<8} "
                        f"{r['version']:<24} {' '.join(r['ports'])}"
                    )
            up = all(r["running"] for r in rows)
            if up and not args.json:
                _print_kai(lab)
            return 0 if up else 3
        elif args.cmd == "kubeconfig":
            print(cfg.kubeconfig)
        elif args.cmd == "env":
            import shlex

            bins = lab.binaries()
            path = [str(bins["kubectl"].parent), str(bins["helm"].parent)]
            # The project's venv (make passes its path): ansible-playbook, molecule, pytest first.
            venv = os.environ.get("KAIOPS_VENV")
            print(f"export KUBECONFIG={shlex.quote(str(cfg.kubeconfig))}")
            if venv:
                print(f"export VIRTUAL_ENV={shlex.quote(venv)}")
                path.insert(0, str(Path(venv) / "bin"))
            print(f'export PATH={shlex.quote(":".join(path))}:"$PATH"')
        elif args.cmd == "plan":
            for comp in lab.plan():
                print(f"# {comp.name} ({comp.version}) ports: {' '.join(comp.ports)}")
                print(" ".join(comp.command()))
    except LabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
