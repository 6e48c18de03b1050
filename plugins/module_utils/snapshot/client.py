# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Client layer of kai_helm_snapshot: read-only helm commands, I/O only.

``run_command`` is passed in (AnsibleModule.run_command or a fake). Failures raise KaiopsError.
The objects' reads go through ``k8s/client.py``.
"""

import json

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_NOT_FOUND,
    KaiopsError,
)


class HelmCli:
    """Runs read-only helm commands; raises KaiopsError on failure."""

    def __init__(self, run_command, binary, kubeconfig=None, context=None):
        self._run = run_command
        self._base = [binary]
        if kubeconfig:
            self._base += ["--kubeconfig", kubeconfig]
        if context:
            self._base += ["--kube-context", context]

    def json(self, args, what):
        rc, out, err = self._run(self._base + args + ["-o", "json"])
        if rc != 0:
            status = STATUS_NOT_FOUND if "not found" in (err or "") else "error"
            raise KaiopsError(
                "Failed to read %s with helm: %s" % (what, (err or out or "").strip()),
                status=status,
            )
        try:
            return json.loads(out or "null")
        except ValueError as exc:
            raise KaiopsError("Failed to read %s with helm: output is not JSON" % what) from exc
