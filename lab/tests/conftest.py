"""The lab's tests. Most of them read synthetic results (the report reads, never trains) and would otherwise compute
the real fingerprint of every arm they touch (`trl_lite_lab.fingerprint`: a few float64 training steps per arm, about
100 s for all 27): they get a stand-in, `{"arm": name}` and `{"evaluation": "task/policy"}`, which records and
compares like the real one. The real fingerprint is what `tests/test_lab_fingerprint.py` computes (the committed
results against today's trl-lite: a comment keeps them, an advantage change does not), and the CLI test's processes;
mark a test `real_fingerprints` to get it (kept in a disk cache for the test run: `fingerprint.CACHE`). (`tests/test_lab_claims.py` reads the summary's own fingerprints.)"""

import os

import pytest

# CI runs these tests with `-n 2` (pytest-xdist, one test process per core): one thread each, or each would start a
# thread per core. Set before torch is imported, and only where the user set none; the fingerprints compare within
# tolerances that hold across thread counts (`trl_lite_lab.fingerprint`).
if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = "1"


@pytest.fixture(autouse=True)
def stand_in_fingerprints(request, monkeypatch, tmp_path_factory):
    from trl_lite_lab import fingerprint

    fingerprint.current_arm.cache_clear()
    fingerprint.current_evaluation.cache_clear()
    if request.node.get_closest_marker("real_fingerprints") is not None:
        # the real ones, kept on disk for this test run (every xdist worker shares the folder: one parent), so the CLI
        # test's processes compute each once; a stand-in never reaches it
        base = tmp_path_factory.getbasetemp()  # under xdist, a worker's own folder in the run's
        monkeypatch.setenv(fingerprint.CACHE, str((base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base)
                                                  / "fingerprints"))
    else:
        monkeypatch.delenv(fingerprint.CACHE, raising=False)
        monkeypatch.setattr(fingerprint, "arm_fingerprint", lambda arm, seed=0: {"arm": arm.name})
        monkeypatch.setattr(fingerprint, "evaluation_fingerprint", lambda task, policy: {"evaluation": f"{task}/{policy}"})
    yield
    fingerprint.current_arm.cache_clear()
    fingerprint.current_evaluation.cache_clear()


@pytest.fixture
def results_script():
    """Loads a result script of `lab/results/` by its file name (`results_script("t4_grid")`), to call its functions:
    the folder is not a package, and a script's `--json` writer is imported only when it runs as a script."""
    import importlib.util

    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, os.path.join(folder, f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
