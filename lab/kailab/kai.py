"""KAI Scheduler in the lab: the version pair under test and its install through helm.

KAI is built from its Go module at exact versions. When the module proxy does not
serve a version, this says so with the proxy's own answer and stops: a version is
never faked and no other source is substituted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

from .config import LabError, load_versions


def resolve(version: str) -> str:
    """`pre`/`patched` or an exact tag, to an exact tag."""
    kai = load_versions()["kai"]
    return kai.get(version, version)


def module_available(module: str, version: str) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{version}"],
            cwd=tmp, capture_output=True, text=True, check=False,
        )  # fmt: skip
    try:
        info = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return False, proc.stderr.strip() or "no answer from go mod download"
    if "Error" in info:
        return False, info["Error"]
    return True, info.get("Dir", "")


def install(version: str) -> None:
    kai = load_versions()["kai"]
    tag = resolve(version)
    ok, detail = module_available(kai["module"], tag)
    if not ok:
        raise LabError(
            f"Failed to install KAI {tag}: the Go module proxy does not serve "
            f"{kai['module']}@{tag} ({detail}). The lab builds KAI only from its module; "
            "see docs/kai-versions.md for what is known and how to verify when it is served"
        )
    raise LabError(
        f"Failed to install KAI {tag}: the module is served but the image build and helm "
        "install are not implemented yet (issue 3)"
    )


def main(argv: list[str]) -> int:
    kai = load_versions()["kai"]
    try:
        if argv[:1] == ["versions"]:
            print(f"pre={kai['pre']} patched={kai['patched']}")
            ok, detail = module_available(kai["module"], kai["pre"])
            if not ok:
                print(
                    f"note: unverified, the module proxy does not serve {kai['module']}: "
                    f"{detail.splitlines()[0]}",
                    file=sys.stderr,
                )
            return 0
        if argv[:1] == ["install"] and len(argv) == 2:
            install(argv[1] or "pre")
            return 0
    except LabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("usage: python -m kailab.kai versions | install <pre|patched|vX.Y.Z>", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
