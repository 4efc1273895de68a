"""CI's upstream stage (.ci/upstream.py): which releases make it run the product's suite, and which only the docs
site's test. A docs tool alone (babel, at stop 47) ran the upstream suite: a 522 s stage of CI's 4155 s."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def module():
    spec = importlib.util.spec_from_file_location("ci_upstream", os.path.join(ROOT, ".ci", "upstream.py"))
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)  # puts the clone on sys.path, where the tests already have it
    return loaded


@pytest.fixture
def upstream(module, monkeypatch):
    def differ(*lines):
        monkeypatch.setattr(module.stack, "differences", lambda: list(lines))
        return module

    return differ


def test_every_docs_tool_is_a_package_of_the_reference_stack(module):
    # a name the stack does not pin (griffe: the distribution is griffelib) would never match a difference
    from tests import stack

    assert set(module.DOCS_TOOLING) <= set(stack.reference_versions())


@pytest.mark.parametrize("lines, docs_changed, docs_only", [
    ([], 1, 1),  # the reference stack: nothing runs again
    (["babel 2.19.0 (reference 2.18.0)"], 0, 0),  # a docs tool alone: the docs site's test only
    (["babel 2.19.0 (reference 2.18.0)", "mkdocs-material 9.9.0 (reference 9.8.2)"], 0, 0),
    (["trl 1.17.0 (reference 1.16.0)"], 1, 1),  # the product's stack: the suite
    (["babel 2.19.0 (reference 2.18.0)", "transformers 5.25.0 (reference 5.24.0)"], 0, 1),  # both: suite and docs
    # a reference package the upstream venv does not install (the lab's scipy) is no release that changed
    (["scipy not installed (reference 1.17.1)"], 1, 1),
])
def test_docs_only_and_docs_changed_classify_the_differences(upstream, lines, docs_changed, docs_only):
    module = upstream(*lines)
    assert (module.docs_changed(), module.docs_only()) == (docs_changed, docs_only)
