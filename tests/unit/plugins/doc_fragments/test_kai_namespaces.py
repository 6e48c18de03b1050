"""Each doc fragment and the argument-spec dict it documents stay in step (name, type, default)."""

import pytest
import yaml

from ansible_collections.kaiops.runbooks.plugins.doc_fragments import kai_namespaces
from ansible_collections.kaiops.runbooks.plugins.module_utils import args_common

PAIRS = [
    (kai_namespaces.ModuleDocFragment.DOCUMENTATION, args_common.KAI_NAMESPACE_ARG_SPEC),
    (kai_namespaces.ModuleDocFragment.RESERVATION, args_common.RESERVATION_NAMESPACE_ARG_SPEC),
]


@pytest.mark.parametrize(("doc", "spec"), PAIRS, ids=["kai_namespace", "reservation_namespace"])
def test_fragment_documents_its_argument_spec(doc, spec):
    options = yaml.safe_load(doc)["options"]
    assert sorted(options) == sorted(spec)
    for name, entry in spec.items():
        assert options[name]["type"] == entry["type"], name
        assert options[name].get("default") == entry.get("default"), name
