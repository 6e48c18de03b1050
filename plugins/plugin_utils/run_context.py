# Copyright: kaiops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's context on the controller: which evidence bundle a play writes into.

The evidence callback (``plugins/callback/evidence.py``) registers its bundle for every play
it sees start (``register``); the collection's action plugins find the bundle of the task they
run from the task's play (``for_task``), as ARA's ``ara_record`` finds its playbook from the
play. Nothing goes through the environment: a module gets the folder as its ``evidence_dir``
option, so it does not matter where or how it runs.

The registry lives in the controller's process. ansible-core runs each task in a worker forked
from it (``ansible.utils.multiprocessing`` pins the fork start method), after the play started,
so every worker sees the plays registered before it.
"""

_PLAYS = {}


def register(play_uuid, root, bundle_dir, run_id, problem=None):
    """Record that the play writes into ``bundle_dir`` (under the evidence store ``root``), or,
    with ``problem``, why the store could not hold the run's bundle (no bundle, no run: the
    request check of every playbook refuses then, before any cluster is read)."""
    _PLAYS[play_uuid] = {"root": root, "dir": bundle_dir, "id": run_id}
    if problem:
        _PLAYS[play_uuid]["problem"] = problem


def forget_all():
    """Tests only: start from an empty registry."""
    _PLAYS.clear()


def for_play(play_uuid):
    """The context of a play: {root, dir, id[, problem]}, or None when none was registered."""
    found = _PLAYS.get(play_uuid)
    return dict(found) if found else None


def for_task(task):
    """The context of the play a task belongs to, or None."""
    try:
        play = task.get_play()
    except AttributeError:
        return None
    return for_play(getattr(play, "_uuid", None))
