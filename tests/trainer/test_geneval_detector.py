"""The geneval reward with a configured detector: a tiny random-weight YOLOS and a tiny CLIP, each saved with
save_pretrained and loaded back through the reward's own path. The detector's heads are set so its output is
known whatever the image (the class head's last layer gives every detection token the same logits, the box head's
the same box): the checks then follow from GenEval's rules, and colour from CLIP's zero-shot choice."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from pydantic import ValidationError

from tests.trainer.conftest import tiny_spec, write_spec
from tests.trainer.test_model_rewards import save_tiny_clip
from trainer.prompt_metadata import remember
from trainer.rewards.clip_colors import COLORS, TEMPLATES, ClipColors
from trainer.rewards.object_detector import ObjectDetector
from trainer.rewards.registry import WeightedReward
from trainer.spec import RewardSpec, SpecError, parse_spec, spec_errors

LABELS = {0: "dog", 1: "circle"}
TOP_LEFT = (1 / 6, 1 / 6, 0.25, 0.25)  # centre x, centre y, width, height, relative to the image
SURE, UNSURE = 8.0, 1.0  # the dog's logit (the others 0): scores e^8 / (e^8 + 2) and e / (e + 2)
DOG = {"tag": "single_object", "prompt": "a photo of a dog", "include": [{"class": "dog", "count": 1}]}


def save_detector(directory: Path, tokens: int, logit: float, label: int = 0) -> Path:
    """A tiny YOLOS whose every detection token says class ``label`` (logit ``logit``, the other class and "no
    object" 0) at the top left, whatever the image."""
    from transformers import YolosConfig, YolosForObjectDetection, YolosImageProcessor

    torch.manual_seed(0)
    config = YolosConfig(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        image_size=[32, 32],
        patch_size=8,
        num_detection_tokens=tokens,
        id2label=LABELS,
        label2id={name: index for index, name in LABELS.items()},
    )
    model = YolosForObjectDetection(config)
    with torch.no_grad():
        classes, boxes = model.class_labels_classifier.layers[-1], model.bbox_predictor.layers[-1]
        classes.weight.zero_()
        classes.bias.copy_(torch.tensor([logit if index == label else 0.0 for index in range(3)]))
        boxes.weight.zero_()
        boxes.bias.copy_(torch.logit(torch.tensor(TOP_LEFT)))
    model.save_pretrained(directory)
    YolosImageProcessor(size={"shortest_edge": 32, "longest_edge": 64}).save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("geneval-detector")
    return {
        "one": save_detector(root / "one", 1, SURE),
        "two": save_detector(root / "two", 2, SURE),
        "unsure": save_detector(root / "unsure", 1, UNSURE),
        "circle": save_detector(root / "circle", 1, SURE, label=1),
        "clip": save_tiny_clip(root / "clip"),
    }


def red_square() -> torch.Tensor:
    """A grey 32 x 32 image with a red square where the detector's box is."""
    image = torch.full((3, 32, 32), 0.6)
    image[:, 1:9, 1:9] = torch.tensor([0.9, 0.1, 0.1]).view(3, 1, 1)
    return image.unsqueeze(0)


def reward(folders: dict[str, Path], detector: str, **options: Any) -> WeightedReward:
    spec = RewardSpec(name="geneval", path=str(folders[detector]), clip_path=str(folders["clip"]), **options)
    return WeightedReward([spec], torch.device("cpu"))


def sub_scores(rewarded: WeightedReward, prompt: str) -> dict[str, float]:
    _, parts = rewarded(red_square(), [prompt])
    return {name.removeprefix("geneval/"): float(values[0]) for name, values in parts.items() if "/" in name}


def reference_classifier(clip: Path, name: str) -> torch.Tensor:
    """GenEval's colour classifier written out on the CLIP model's own text features (clip_benchmark's
    zero_shot_classifier: per colour the mean of the normalised template embeddings, normalised)."""
    from transformers import AutoTokenizer, CLIPModel

    model, tokenizer = CLIPModel.from_pretrained(clip), AutoTokenizer.from_pretrained(clip)
    texts = [template.format(color=color, name=name) for color in COLORS for template in TEMPLATES]
    tokens = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        text = F.normalize(model.get_text_features(**tokens).pooler_output, dim=-1).reshape(len(COLORS), 3, -1)
    return F.normalize(text.mean(dim=1), dim=-1)


def reference_colour(clip: Path, image: torch.Tensor, name: str) -> str:
    """The colour of highest cosine with the crop of the detector's box (1/6 ± 1/8 of 32 px: 1.33 .. 9.33,
    rounded to whole pixels)."""
    from trainer.rewards.clip_embedding import ClipEmbedder

    embedding = ClipEmbedder(str(clip), torch.device("cpu")).image_embeds(image[:, :, 1:9, 1:9])
    return COLORS[int((embedding @ reference_classifier(clip, name).T).argmax())]


def test_the_detector_gives_its_heads_boxes_in_pixels_with_their_scores(folders: dict[str, Path]) -> None:
    found = ObjectDetector(str(folders["two"]), torch.device("cpu")).detect(red_square(), threshold=0.3)
    assert [box.label for box in found[0]] == ["dog", "dog"]
    assert found[0][0].score == pytest.approx(math.exp(SURE) / (math.exp(SURE) + 2), rel=1e-5)
    assert found[0][0].box == pytest.approx((32 * (1 / 6 - 1 / 8), 32 * (1 / 6 - 1 / 8), 32 * 7 / 24, 32 * 7 / 24))


def test_an_object_below_the_score_threshold_is_not_found(folders: dict[str, Path]) -> None:
    """e / (e + 2) = 0.58: kept at GenEval's 0.3, not at 0.6."""
    remember([DOG])
    assert sub_scores(reward(folders, "unsure"), DOG["prompt"])["presence"] == 1.0
    assert sub_scores(reward(folders, "unsure", score_threshold=0.6), DOG["prompt"])["presence"] == 0.0


def test_a_counting_prompt_keeps_only_objects_above_genevals_counting_threshold(folders: dict[str, Path]) -> None:
    counting = {**DOG, "tag": "counting", "prompt": "a photo of one dog"}
    remember([counting])
    assert sub_scores(reward(folders, "unsure"), counting["prompt"])["count"] == 0.0
    assert sub_scores(reward(folders, "one"), counting["prompt"])["count"] == 1.0


def test_the_colour_is_clips_zero_shot_choice_on_the_objects_crop(folders: dict[str, Path]) -> None:
    colors = ClipColors(str(folders["clip"]), torch.device("cpu"))
    chosen = colors.colors(red_square()[0], "dog", [(32 * (1 / 6 - 1 / 8),) * 2 + (32 * 7 / 24,) * 2])
    assert torch.allclose(colors.classifier("dog"), reference_classifier(folders["clip"], "dog"), atol=1e-6)
    assert chosen == [reference_colour(folders["clip"], red_square(), "dog")]


def test_the_checks_follow_genevals_rules_on_the_detectors_objects(folders: dict[str, Path]) -> None:
    """Two dogs at the top left: presence holds, one dog is a wrong count, two is right; the colour is CLIP's."""
    colour = reference_colour(folders["clip"], red_square(), "dog")
    rows = [
        {"tag": "counting", "prompt": "a photo of two dogs", "include": [{"class": "dog", "count": 2}]},
        {"tag": "colors", "prompt": "a photo of a red dog", "include": [{"class": "dog", "count": 1, "color": "red"}]},
        {"tag": "position", "prompt": "a dog at the top left", "include": [{"class": "dog", "count": 1}]},
        {"tag": "single_object", "prompt": "a photo of a circle", "include": [{"class": "circle", "count": 1}]},
    ]
    rows[2]["include"][0]["position"] = ["top left", "grid"]
    remember(rows)
    two = reward(folders, "two")
    assert sub_scores(two, rows[0]["prompt"]) | {"color": None} == {
        "presence": 1.0,
        "count": 1.0,
        "color": None,
        "position": 1.0,
        "correct": 1.0,
    }
    coloured = sub_scores(two, rows[1]["prompt"])
    assert (coloured["count"], coloured["color"]) == (0.0, 0.0)  # two dogs for one: count fails, and GenEval's
    # colour check needs the count's objects, so it fails with it
    one = reward(folders, "one")
    assert sub_scores(one, rows[1]["prompt"])["color"] == float(colour == "red")
    assert sub_scores(one, rows[2]["prompt"])["position"] == 1.0
    assert sub_scores(one, rows[3]["prompt"]) | {"color": None} == {
        "presence": 0.0,
        "count": 0.0,
        "color": None,
        "position": 1.0,
        "correct": 0.0,
    }


def test_a_missing_detector_path_is_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as error:
        parse_spec(tiny_spec(reward=[{"name": "geneval", "path": str(tmp_path / "none"), "clip_path": str(tmp_path)}]))
    assert [problem["field"] for problem in spec_errors(error.value)] == ["reward.0.path"]


def test_a_detector_path_without_a_clip_path_is_refused_naming_clip_path(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as error:
        parse_spec(tiny_spec(reward=[{"name": "geneval", "path": str(tmp_path)}]))
    assert [problem["field"] for problem in spec_errors(error.value)] == ["reward.0.clip_path"]


def test_a_folder_that_holds_no_detector_is_a_spec_error_naming_the_path(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    with pytest.raises(SpecError) as error:
        WeightedReward([RewardSpec(name="geneval", path=str(tmp_path), clip_path=str(folders["clip"]))], "cpu")
    assert error.value.field == "reward.path"
    with pytest.raises(SpecError) as error:
        WeightedReward([RewardSpec(name="geneval", path=str(folders["one"]), clip_path=str(tmp_path))], "cpu")
    assert error.value.field == "reward.clip_path"


def test_the_detector_options_belong_to_geneval_alone() -> None:
    with pytest.raises(ValidationError) as error:
        parse_spec(tiny_spec(reward=[{"name": "brightness", "score_threshold": 0.5}]))
    assert [problem["field"] for problem in spec_errors(error.value)] == ["reward.0.score_threshold"]


def test_a_job_on_a_geneval_metadata_prompt_set_is_rewarded_by_each_prompts_row(
    tmp_path: Path, folders: dict[str, Path], sfumato_home: Path
) -> None:
    """The prompt set's rows reach the reward through the job's own prompt loading: one dog, found once."""
    from trainer.run import METRICS_FILE, run

    prompts = tmp_path / "train_metadata.jsonl"
    prompts.write_text(json.dumps({**DOG, "prompt": "a photo of a single dog"}) + "\n")
    geneval = {"name": "geneval", "path": str(folders["one"]), "clip_path": str(folders["clip"])}
    algorithm = {"sampling_steps": 2, "total_steps": 1, "prompts_per_step": 1, "group_size": 2}
    sections = {"samples": {"count": 0}, "checkpoint": {"every": 0}, "prompts": {"source": str(prompts)}}
    spec = write_spec(tmp_path / "spec.json", tiny_spec(reward=[geneval], algorithm=algorithm, **sections))
    run(spec, tmp_path / "out", resume=False)
    metrics = json.loads((tmp_path / "out" / METRICS_FILE).read_text().splitlines()[0])
    assert metrics["reward/geneval"] == 1.0 and metrics["reward/geneval/correct"] == 1.0


def test_an_evaluation_job_scores_with_the_configured_detector(
    tmp_path: Path, folders: dict[str, Path], sfumato_home: Path
) -> None:
    """A shapes caption asks one red circle at the top left and no second circle; the detector finds one circle
    there whatever the tiny model draws, so every check but the colour (CLIP's choice on the drawn crop) passes."""
    from trainer.__main__ import main
    from trainer.tasks.eval_task import REPORT_NAME

    caption = "a small red circle at the top left on a black background"
    geneval = {"name": "geneval", "path": str(folders["circle"]), "clip_path": str(folders["clip"])}
    task = {"kind": "eval", "source": None, "prompt_set": "eval.txt", "prompts": [caption], "seeds_per_prompt": 2}
    (tmp_path / "task.json").write_text(json.dumps(task))
    spec = write_spec(tmp_path / "spec.json", tiny_spec(reward=[geneval]))
    argv = ["task", "--spec", str(spec), "--task", str(tmp_path / "task.json"), "--output-dir", str(tmp_path / "out")]
    assert main(argv) == 0
    report = json.loads((tmp_path / "out" / REPORT_NAME).read_text())
    (scores,) = [entry["scores"] for entry in report["rewards"] if entry["name"] == "geneval"]
    assert len(scores) == 2 and all(score in (pytest.approx(0.8), 1.0) for score in scores)


def test_the_eval_split_of_a_fetched_geneval_dataset_gives_the_reward_its_rows(tmp_path: Path) -> None:
    """The job reads its eval prompts from the fetched split (as trainer/dataset_fetch.py leaves it in the job's
    folder); their rows reach the reward as a GenEval prompts.source's do."""
    from trainer.dataset_fetch import with_local_datasets
    from trainer.prompt_metadata import metadata_of

    folder = tmp_path / "datasets" / "composition@1"
    folder.mkdir(parents=True)
    row = {**DOG, "prompt": "a photo of a held-out dog"}
    (folder / "test_metadata.jsonl").write_text(json.dumps(row) + "\n")
    prompts = {"source": "builtin:colors", "eval_source": "dataset:composition@1:test"}
    local = with_local_datasets(parse_spec(tiny_spec(prompts=prompts)), tmp_path)
    assert local.prompts.eval == [row["prompt"]]
    assert metadata_of(row["prompt"]) == {**row, "exclude": []}


def test_an_evaluation_of_a_prompt_without_a_metadata_row_is_a_spec_error_not_a_zero(
    tmp_path: Path, sfumato_home: Path
) -> None:
    from trainer.__main__ import main
    from trainer.spec.exit_codes import SPEC_ERROR_EXIT_CODE

    task = {"kind": "eval", "prompt_set": "eval.txt", "prompts": ["a photo of an unlisted cat"]}
    (tmp_path / "task.json").write_text(json.dumps(task))
    spec = write_spec(tmp_path / "spec.json", tiny_spec(reward=[{"name": "geneval"}]))
    argv = ["task", "--spec", str(spec), "--task", str(tmp_path / "task.json"), "--output-dir", str(tmp_path / "out")]
    assert main(argv) == SPEC_ERROR_EXIT_CODE
    assert not (tmp_path / "out" / "evaluation.json").exists()
