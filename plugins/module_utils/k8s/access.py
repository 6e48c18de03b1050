# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Access to a cluster, for every feature: the client for a module's connection options, and an
optional read whose refusal is recorded, not fatal."""

from ansible_collections.kaiops.runbooks.plugins.module_utils.errors import (
    STATUS_FORBIDDEN,
    STATUS_NOT_FOUND,
    STATUS_UNAUTHORIZED,
    KaiopsError,
)


def client_from(params, client_factory):
    """The client for the module's connection options (kubeconfig, context, request_timeout)."""
    return client_factory(
        params.get("kubeconfig"), params.get("context"), params.get("request_timeout") or 30
    )


def read_optional(access, section, read, not_found):
    """Run read(); record 'ok', 'forbidden' or the ``not_found`` label in access[section].

    A 401/403 or a 404 (an API or object the cluster does not serve) returns None; any
    other KaiopsError is raised.
    """
    try:
        value = read()
    except KaiopsError as exc:
        if exc.status in (STATUS_FORBIDDEN, STATUS_UNAUTHORIZED):
            access[section] = "forbidden"
            return None
        if exc.status == STATUS_NOT_FOUND:
            access[section] = not_found
            return None
        raise
    access[section] = "ok"
    return value


class Reads:
    """The optional reads of one collect, each section's outcome in ``access``."""

    def __init__(self, not_found, access=None):
        self.access = {} if access is None else access
        self.not_found = not_found

    def optional(self, section, read, *args, **kwargs):
        """read(*args, **kwargs) through read_optional, with this collect's ``not_found`` label."""
        return read_optional(self.access, section, lambda: read(*args, **kwargs), self.not_found)
