"""Edit sets, the prompt sets of the families that take a conditioning image: the spec pairs them with those
families only, each row's image travels with its own conditioning (two rows of one instruction keep their own
images), and CFG's unconditional branch keeps the row's image."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from pydantic import ValidationError

from tests.trainer.conftest import EDIT_ROWS, write_edit_set
from tests.trainer.test_families import algorithm_spec
from trainer.edit_prompt import EditPrompt, negative_prompt, prompt_key
from trainer.job import TrainingJob
from trainer.models.base import Conditioning
from trainer.prompts import load_eval_prompts, load_prompts
from trainer.spec import parse_spec, spec_errors, stored_spec


def kontext_spec(kontext_dir: Path, source: str, **algorithm: Any) -> dict[str, Any]:
    spec = algorithm_spec("flow_grpo", {"family": "flux_kontext", "path": str(kontext_dir)}, steps=1)
    spec["algorithm"].update(algorithm)
    spec["prompts"] = {"source": source}
    return spec


def refusal(spec: dict[str, Any]) -> dict[str, Any]:
    with pytest.raises(ValidationError) as error:
        parse_spec(spec)
    (problem,) = spec_errors(error.value)
    return problem


@pytest.fixture(scope="module")
def job(sfumato_home: Path, kontext_dir: Path, edit_set_dir: Path) -> TrainingJob:
    """A Kontext job on the edit set, with CFG on (its unconditional branch is built per row)."""
    return TrainingJob.build(parse_spec(kontext_spec(kontext_dir, str(edit_set_dir), cfg_scale=2.0)), "sharded")


def test_an_image_family_without_an_edit_set_is_refused_naming_prompts_source(kontext_dir: Path) -> None:
    problem = refusal(kontext_spec(kontext_dir, "builtin:colors"))
    assert problem["field"] == "prompts.source" and "'flux_kontext'" in problem["message"]


def test_an_edit_set_for_a_text_only_family_is_refused_naming_prompts_source(edit_set_dir: Path) -> None:
    spec = algorithm_spec("flow_grpo", {"family": "flux"}, steps=1)
    spec["prompts"] = {"source": str(edit_set_dir / "train.jsonl")}
    problem = refusal(spec)
    assert problem["field"] == "prompts.source" and "'flux'" in problem["message"]


def test_an_edit_set_row_whose_image_is_missing_is_refused_naming_the_row(tmp_path: Path, kontext_dir: Path) -> None:
    folder = write_edit_set(tmp_path / "edits")
    (folder / EDIT_ROWS[2][1]).unlink()
    problem = refusal(kontext_spec(kontext_dir, str(folder)))
    assert problem["field"] == "prompts.source"
    assert "test.jsonl row 1: image 'images/white.png' is not a file" in problem["message"]


def test_a_stored_spec_reads_back_without_its_edit_set_being_read_again(tmp_path: Path, kontext_dir: Path) -> None:
    folder = write_edit_set(tmp_path / "edits")
    data = parse_spec(kontext_spec(kontext_dir, str(folder))).model_dump(mode="json")
    (folder / EDIT_ROWS[0][1]).unlink()
    assert stored_spec(data) is not None


def test_a_malformed_edit_set_row_is_refused_naming_line_and_column(tmp_path: Path, kontext_dir: Path) -> None:
    folder = write_edit_set(tmp_path / "edits")
    (folder / "train.jsonl").write_text('{"prompt": "make it red", "image": "../outside.png"}\n')
    problem = refusal(kontext_spec(kontext_dir, str(folder)))
    assert problem["field"] == "prompts.source" and "train.jsonl line 1, column" in problem["message"]


def test_an_edit_set_loads_its_rows_as_instructions_carrying_their_images(edit_set_dir: Path) -> None:
    rows = load_prompts(str(edit_set_dir))
    assert [(str(r), r.image) for r in rows] == [(p, edit_set_dir / i) for p, i, _ in EDIT_ROWS]  # type: ignore[attr-defined]
    evaluated = load_eval_prompts(str(edit_set_dir), ["one", "two"])
    assert [prompt_key(p) for p in evaluated] == [prompt_key(p) for p in rows[2:]]  # the test split's rows


def test_rows_sharing_an_instruction_keep_their_own_image_latents(job: TrainingJob) -> None:
    first, second = job.prompts[:2]
    assert first == second  # one instruction, two images
    cond = job.conditioning([first, second])
    assert torch.equal(cond.hidden[0], cond.hidden[1])
    assert not torch.equal(cond.image[0], cond.image[1])  # type: ignore[index]


def test_the_unconditional_branch_is_the_empty_prompt_with_the_row_s_image(job: TrainingJob) -> None:
    rows = job.prompts[:2]
    uncond, cond = job.unconditional(rows), job.conditioning(rows)
    empty = job.conditioning([negative_prompt(rows[0])])
    assert uncond is not None and torch.equal(uncond.image, cond.image)  # type: ignore[arg-type]
    assert torch.equal(uncond.hidden[0], empty.hidden[0]) and not torch.equal(uncond.hidden[0], cond.hidden[0])


def test_the_conditioning_image_is_indexed_and_stacked_with_its_row() -> None:
    cond = Conditioning(torch.arange(3.0).view(3, 1, 1), image=torch.arange(3.0).view(3, 1, 1, 1) + 10)
    both = Conditioning.cat([cond.index([2]), cond.index([0])])
    assert both.image.flatten().tolist() == [12.0, 10.0] and both.pinned().image.flatten().tolist() == [12.0, 10.0]  # type: ignore[union-attr]


def test_an_edit_prompt_survives_pickling_with_its_image() -> None:
    import pickle

    row = EditPrompt("make the ball red", Path("images/blue.png"))
    assert prompt_key(pickle.loads(pickle.dumps(row))) == ("make the ball red", Path("images/blue.png"))
