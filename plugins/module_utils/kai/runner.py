# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runner of kai_identify: the one reading of what KAI runs (kai/identify.py), for every feature.

The only layer that exits. With ``wait_s`` it reads until KAI runs ``expected_version`` rolled
out or the bound passed, and returns the measured seconds: not rolled out in time is a result
(``rolled_out: false`` with the reasons), not a failure, so a caller can record it as a failed
gate. Without ``wait_s``, ``expected_version`` must run rolled out now, or the module fails.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import KaiopsError
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.access import client_from
from ansible_collections.kaiops.runbooks.plugins.module_utils.k8s.client import KubeClient
from ansible_collections.kaiops.runbooks.plugins.module_utils.kai import identify as I


def run_identify(module):
    p = module.params
    client = client_from(p, KubeClient.from_options)
    expected = p.get("expected_version")
    helm = p.get("helm") or None
    if p.get("wait_s") and expected:
        ident, took, ok, reasons = I.wait_rolled_out(
            client, p["kai_namespace"], expected, p["wait_s"], helm=helm
        )
        module.exit_json(
            changed=False, identity=ident, rolled_out=ok, rolled_out_s=took, reasons=reasons
        )
    ident = I.identify(client, p["kai_namespace"], helm=helm)
    if not ident["components"]:
        raise KaiopsError(
            "Failed to identify KAI in namespace %s: no KAI Deployments there; install KAI "
            "first (on the lab: make lab-up)" % p["kai_namespace"],
            details={"identity": ident},
        )
    ok, reasons = I.rolled_out(ident, expected) if expected else (ident["all_rolled_out"], [])
    if expected and ident["version"] != expected:
        raise KaiopsError(
            "Failed to identify build %s: the binder runs %s (%s); install %s first"
            % (expected, ident["version"], ident["version_source"], expected),
            details={"identity": ident},
        )
    if not ok:
        raise KaiopsError(
            "Failed to identify build %s: KAI is still rolling out (%s)"
            % (expected or ident["version"], "; ".join(reasons) or "Deployments rolling out"),
            details={"identity": ident},
        )
    module.exit_json(changed=False, identity=ident, rolled_out=True, rolled_out_s=0.0, reasons=[])
