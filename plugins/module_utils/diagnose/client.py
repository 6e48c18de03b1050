# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads of kai_diagnose_info: what the Pending diagnosis needs, in one dict. I/O only.

The reads are the shared scan's (``scan/client.py`` ``PendingClient``: one LIST per kind,
Events and ConfigMaps per namespace that holds Pending pods, the recent log of KAI's scheduler,
binder and pod grouper), so recovery.yml reads what diagnose.yml reads and gives a Pending pod the
same cause. The decisions are in ``diagnose/service.py`` over ``scan/pending.py``.
"""

from ansible_collections.kaiops.runbooks.plugins.module_utils.scan.client import PendingClient


class DiagnoseClient(PendingClient):
    """The Pending diagnosis' reads, as diagnose.yml makes them."""
