"""The ``geneval`` reward's options: on a GenEval metadata prompt set, a detector loaded from a local folder.

Without ``path`` the reward reads the shapes model's images with its exact shape detector. With ``path`` (a
transformers object-detection model saved with ``save_pretrained``: DETR, Conditional DETR, YOLOS) the objects are
the detector's, kept above ``score_threshold`` (GenEval's ``threshold``, 0.3; prompts tagged ``counting`` keep
GenEval's ``counting_threshold``, 0.9, or the score threshold where it is higher), and colours are CLIP's zero-shot
choice among GenEval's colour names on each object's crop, from the CLIP folder at ``clip_path``
(evaluation/evaluate_images.py in github.com/djghosh13/geneval)."""

from __future__ import annotations

from trainer.spec.eval_task import GENEVAL_METADATA_SETS

GENEVAL = "geneval"
GENEVAL_OPTIONS = ("score_threshold", "clip_path")
DEFAULT_SCORE_THRESHOLD = 0.3  # GenEval's --options threshold
COUNTING_THRESHOLD = 0.9  # GenEval's --options counting_threshold, for prompts tagged "counting"


def carries_geneval_rows(source: str) -> bool:
    """Whether a prompt source that is not a team dataset (whose format says) gives the geneval reward each prompt's
    GenEval row: a shapes set, or a local ``*metadata.jsonl``."""
    return source in GENEVAL_METADATA_SETS or source.endswith("metadata.jsonl")


def missing_geneval_rows(name: str) -> str:
    """The refusal of the geneval reward on the prompt set ``name``, which has no GenEval rows: every prompt would
    score 0 on every check, every group tie, and nothing be learnt or measured."""
    return (
        f"the {GENEVAL} reward checks each prompt against its GenEval metadata row, and {name!r} has none: choose a "
        f"team dataset of format geneval or a shapes set ({', '.join(GENEVAL_METADATA_SETS)})"
    )
