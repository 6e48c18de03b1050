"""Thin CLI over the lab library: flags in, one call, errors reported once (kind's habit)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
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


def _fleet_up(labs: list[Lab]) -> None:
    """Bring a fleet up: what touches the host or the shared caches one cluster at a time,
    the host's own first (it sets the host up); then every cluster's own processes and KAI
    side by side, each waiting on its own API server and node."""
    from concurrent.futures import ThreadPoolExecutor

    started = time.monotonic()
    down = [lab for lab in labs if not lab.already_up()]
    for lab in down:
        lab.prepare()
    labs[0].prepare_shared()
    with ThreadPoolExecutor(max_workers=len(labs)) as pool:
        futures = [pool.submit(lab.up, prepared=True) for lab in labs]
    errors = [f.exception() for f in futures if f.exception() is not None]
    if errors:
        raise errors[0]
    print(f"fleet of {len(labs)} clusters up in {time.monotonic() - started:.1f}s", flush=True)


def _env(lab: Lab, fleet: list[LabConfig]) -> None:
    import shlex

    bins = lab.binaries()
    path = [str(bins["kubectl"].parent), str(bins["helm"].parent)]
    # The project's venv (make passes its path): ansible-playbook, molecule, pytest first.
    venv = os.environ.get("KAIOPS_VENV")
    selected = LabConfig.selected()
    print(f"export KUBECONFIG={shlex.quote(str(selected.kubeconfig))}")
    if selected.index != 1:  # inventories/lab and the drills read them: they go there too
        print(f"export KAIOPS_LAB_KUBECONFIG={shlex.quote(str(selected.kubeconfig))}")
        print(f"export KAIOPS_LAB_CHARTS={shlex.quote(str(selected.path('charts')))}")
    if venv:
        print(f"export VIRTUAL_ENV={shlex.quote(venv)}")
        path.insert(0, str(Path(venv) / "bin"))
    print(f'export PATH={shlex.quote(":".join(path))}:"$PATH"')
    if len(fleet) > 1:  # a fleet: every cluster's kubeconfig, in cluster order
        configs = ":".join(str(c.kubeconfig) for c in fleet)
        print(f"export KAIOPS_LAB_KUBECONFIGS={shlex.quote(configs)}")


def _status(labs: list[Lab], as_json: bool) -> int:
    """Each cluster's components (a heading per cluster when there are several)."""
    code = 0
    for lab in labs:
        cfg = lab.cfg
        if len(labs) > 1 and not as_json:
            print(f"== cluster {cfg.index} of {len(labs)}: lab {cfg.name} ({cfg.api_url})")
        if not cfg.state_dir.exists():
            print(f"lab {cfg.name} is not up: start it with `make lab-up`")
            code = 3
            continue
        rows = lab.status()
        if as_json:
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
        if up and not as_json:
            _print_kai(lab)
        code = code if up else 3
    return code


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
        fleet = LabConfig.fleet_from_env()
        cfg = fleet[0]

        def lab_of(c: LabConfig, tag: str = "") -> Lab:
            return Lab(
                c,
                log=lambda m: print(f"{tag}{m}", flush=True),
                kai_version=os.environ.get("KAI_VERSION") or None,
                kai_bundle=os.environ.get("KAI_BUNDLE") or None,
            )

        lab = lab_of(cfg)
        if args.cmd == "build":
            from .build import build_all

            build_all()
        elif args.cmd == "up":
            if len(fleet) == 1:
                lab.up()
            else:
                _fleet_up([lab, *(lab_of(c, f"[{c.name}] ") for c in fleet[1:])])
        elif args.cmd == "down":
            # every cluster on the machine, whatever LAB_CLUSTERS says; the host's own last
            leftovers = []
            for c in reversed(LabConfig.on_machine(fleet)):
                leftovers += lab_of(c).down()
            if leftovers:
                print("left behind:\n  " + "\n  ".join(leftovers), file=sys.stderr)
                return 1
        elif args.cmd == "kai":
            # KAIOPS_LAB_CLUSTER: that cluster alone (a drill on cluster 2 switches only its KAI)
            targets = [LabConfig.selected()] if os.environ.get("KAIOPS_LAB_CLUSTER") else fleet
            for c in targets:
                if not c.kubeconfig.exists():
                    raise LabError(
                        f"Failed to switch KAI on lab {c.name}: it is not up; start it with "
                        "`make lab-up`"
                    )
                one = lab_of(c)
                one.kai_version, one.kai_bundle = args.version, args.bundle
                print(json.dumps(one.install_kai()))
        elif args.cmd == "kai-bundle":
            from .kai import export_bundle

            print(export_bundle(lab, args.version, Path(args.dest)))
        elif args.cmd == "status":
            return _status([lab_of(c) for c in fleet], args.json)
        elif args.cmd == "kubeconfig":
            print(cfg.kubeconfig)
        elif args.cmd == "env":
            _env(lab, fleet)
        elif args.cmd == "plan":
            for c in fleet:
                for comp in lab_of(c).plan():
                    print(f"# {c.name}: {comp.name} ({comp.version}) ports: {' '.join(comp.ports)}")
                    print(" ".join(comp.launch()))
    except LabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
