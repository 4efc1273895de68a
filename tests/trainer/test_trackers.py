"""The diagnostics and the clipped-token table reach real trackers, read back with each tracker's own reader:
trackio (local SQLite), TensorBoard (event files) and wandb in offline mode (its table file). Nothing is stubbed.

One training run in a subprocess logs to all three: trackio, TensorBoard and wandb keep process-wide state (a current
run, environment read at import) that must not leak into the other tests.
"""

import glob
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIAGNOSTICS = ["entropy/correct", "entropy/incorrect", "advantages/abs_mean", "rewards/frac_groups_mixed",
               "repetition/frac", "overlong/frac_truncated", "generation/completions_total"]
RUN = """
import sys
sys.path.insert(0, {root!r})
from tests.tiny import prompt_dataset, reward_digit_count, train_args
from trl_lite import LitePPOConfig, LitePPOTrainer

# num_iterations=2: the second pass is off-policy, so tokens clip and the clipped-token table has rows
args = LitePPOConfig(**train_args({out!r}, report_to=["trackio", "tensorboard", "wandb"], max_steps=3,
                                  num_iterations=2, project="trl-lite-test", run_name="diag"))
LitePPOTrainer(model={model!r}, reward_funcs=reward_digit_count, args=args, train_dataset=prompt_dataset()).train()
"""


@pytest.fixture(scope="module")
def logged(tiny_model_dir, tmp_path_factory):
    base = tmp_path_factory.mktemp("trackers")
    out = base / "out"
    env = {**os.environ, "TRACKIO_DIR": str(base / "trackio"), "WANDB_MODE": "offline", "WANDB_DIR": str(base),
           "WANDB_SILENT": "true", "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    code = RUN.format(root=ROOT, out=str(out), model=tiny_model_dir)
    result = subprocess.run([sys.executable, "-c", code], cwd=base, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    with open(out / "clipped_tokens.jsonl") as f:
        table = [json.loads(line) for line in f]
    assert any(line["tokens"] for line in table)  # there is a table to find
    return base, out, table


def test_trackio_has_the_diagnostics_and_the_table(logged):
    base, _, table = logged
    code = ("import json; from trackio.sqlite_storage import SQLiteStorage as S; "
            "print(json.dumps(S.get_logs(project='trl-lite-test', run='diag'), default=str))")
    result = subprocess.run([sys.executable, "-c", code], env={**os.environ, "TRACKIO_DIR": str(base / "trackio")},
                            capture_output=True, text=True, timeout=120)
    logs = json.loads(result.stdout.strip().splitlines()[-1])
    keys = {key for row in logs for key in row}
    assert {f"train/{name}" for name in DIAGNOSTICS} <= keys
    tables = [row["clipped_tokens"] for row in logs if "clipped_tokens" in row]
    assert tables and "trackio.table" in str(tables[0])
    first = next(line for line in table if line["tokens"])["tokens"][0]
    assert any(f"'token_id': {first['token_id']}" in str(t) and f"'count': {first['count']}" in str(t) for t in tables)


def test_tensorboard_has_the_diagnostics_and_the_table(logged):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _, out, table = logged
    (folder,) = glob.glob(str(out / "runs" / "*"))
    events = EventAccumulator(folder, size_guidance={"tensors": 0, "scalars": 0})
    events.Reload()
    assert {f"train/{name}" for name in DIAGNOSTICS} <= set(events.Tags()["scalars"])
    steps = [event.step for event in events.Scalars("train/entropy/correct")]
    assert steps == [1, 2, 3]
    texts = events.Tensors("train/clipped_tokens/text_summary")
    assert [t.step for t in texts] == [line["step"] for line in table if line["tokens"]]
    markdown = texts[0].tensor_proto.string_val[0].decode()
    assert markdown.startswith("| bound | token | token_id | count | share |")
    first = next(line for line in table if line["tokens"])["tokens"][0]
    assert f"| {first['bound']} | {first['token']!r} | {first['token_id']} | {first['count']} |" in markdown


def test_wandb_offline_has_the_table(logged):
    base, _, table = logged
    files = glob.glob(str(base / "wandb" / "offline-run-*" / "files" / "media" / "table" / "clipped_tokens_*.json"))
    assert len(files) == sum(1 for line in table if line["tokens"])
    with open(sorted(files, key=os.path.getmtime)[0]) as f:
        logged_table = json.load(f)
    assert logged_table["columns"] == ["bound", "token", "token_id", "count", "share"]
    first = next(line for line in table if line["tokens"])["tokens"]
    assert [row[2] for row in logged_table["data"]] == [row["token_id"] for row in first]
