"""Thin CLI over the lab library: flags in, one call, errors reported once (kind's habit)."""

from __future__ import annotations

import argparse
import json
import sys

from .cluster import Lab
from .config import LabConfig, LabError


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
    args = parser.parse_args(argv)

    try:
        cfg = LabConfig.from_env()
        lab = Lab(cfg, log=lambda m: print(m, flush=True))
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
        elif args.cmd == "status":
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
            return 0 if all(r["running"] for r in rows) else 3
        elif args.cmd == "kubeconfig":
            print(cfg.kubeconfig)
        elif args.cmd == "env":
            bins = lab.binaries()
            print(f"export KUBECONFIG={cfg.kubeconfig}")
            print(f'export PATH={bins["kubectl"].parent}:{bins["helm"].parent}:"$PATH"')
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
