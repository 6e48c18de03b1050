# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one exception of the kaiops.runbooks package.

Lower layers (client, service) raise it, ``from`` the cause, with a message that
reads "Failed to <verb> <object>: <reason>". The module's main() turns it into
``fail_json`` once, at the top, passing ``details`` as extra result keys.
"""

# How a failure reads to an operator; the inventory reports it per cluster.
STATUS_UNREACHABLE = "unreachable"
STATUS_UNAUTHORIZED = "unauthorized"
STATUS_FORBIDDEN = "forbidden"
STATUS_NOT_FOUND = "not_found"
STATUS_INVALID = "invalid_input"
STATUS_ERROR = "error"


class KaiopsError(Exception):
    """Base exception: ``status`` classifies the failure, ``details`` go into the result."""

    def __init__(self, msg, status=STATUS_ERROR, http_status=None, details=None):
        super(KaiopsError, self).__init__(msg)
        self.msg = msg
        self.status = status
        self.http_status = http_status
        self.details = dict(details or {})

    def result(self):
        """Keys that main() passes to fail_json next to msg."""
        out = {"status": self.status}
        if self.http_status is not None:
            out["http_status"] = self.http_status
        out.update(self.details)
        return out
