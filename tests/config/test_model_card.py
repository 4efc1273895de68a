"""The model card renderer on its own: hub datasets, evaluation results, final reward."""

from trl_lite import LitePPOConfig
from trl_lite.hub import render_model_card
from trl_lite.trainer import LitePPOTrainer


def _render(tmp_path, log_history, **kwargs):
    args = LitePPOConfig.from_recipe("instruct", output_dir=str(tmp_path), use_cpu=True, report_to="none",
                                     per_device_train_batch_size=8, num_generations=8)
    return str(render_model_card(args, log_history, model_name="m", trainer_name="LitePPO",
                                 paper=LitePPOTrainer._paper, tags=LitePPOTrainer._tag_names, **kwargs))


def test_hub_datasets_are_linked_and_local_ones_are_not(tmp_path):
    local = tmp_path / "data.jsonl"
    local.write_text("")
    card = _render(tmp_path, [], datasets=["zwhe99/DeepMath-103K", str(local), "built-in arithmetic task"])
    front_matter = card.split("---")[1]
    assert "zwhe99/DeepMath-103K" in front_matter and str(local) not in front_matter
    assert "[zwhe99/DeepMath-103K](https://huggingface.co/datasets/zwhe99/DeepMath-103K)" in card
    assert f", {local}, built-in arithmetic task" in card  # plain text


def test_final_reward_and_evaluation(tmp_path):
    history = [
        {"reward": 0.25, "step": 1},
        {"reward": 0.75, "step": 2},
        {"eval_loss": 0.5, "eval_reward": 0.6, "step": 2},
        {"train_runtime": 3.0},
    ]
    card = _render(tmp_path, history, evaluation={"math500/accuracy": 0.42}, global_step=2, epoch=0.5)
    assert "| final reward | 0.75 |" in card  # the last logged reward
    assert "| eval_reward | 0.6 |" in card and "| eval_loss | 0.5 |" in card
    assert "| math500/accuracy | 0.42 |" in card
    assert "| clip bounds (epsilon low / high) | 0.2 / 0.28 |" in card and "| recipe | instruct |" in card


def test_no_evaluation_says_so(tmp_path):
    assert "No evaluation results were recorded" in _render(tmp_path, [{"reward": 1.0}])


def test_dapo_recipe_settings_are_on_the_card(tmp_path):
    args = LitePPOConfig.from_recipe("dapo", output_dir=str(tmp_path), use_cpu=True, report_to="none",
                                     per_device_train_batch_size=8, num_generations=8, advantage_std="auto")
    card = str(render_model_card(args, [], model_name="m", trainer_name="LitePPO", paper=LitePPOTrainer._paper,
                                 tags=LitePPOTrainer._tag_names))
    # advantage_std="auto" is not DAPO's group std: the card says the named recipe was modified
    assert "| recipe | dapo (modified) |" in card and "| overlong filter | True |" in card
    assert "| soft overlong punishment | True |" in card
    assert "| dynamic sampling | up to 3 extra rounds |" in card
    assert "| advantage mean / std | group / auto (threshold 0.5) |" in card
