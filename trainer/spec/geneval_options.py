"""The ``geneval`` reward's options: on a GenEval metadata prompt set, a detector loaded from a local folder.

Without ``path`` the reward reads the shapes model's images with its exact shape detector. With ``path`` (a
transformers object-detection model saved with ``save_pretrained``: DETR, Conditional DETR, YOLOS) the objects are
the detector's, kept above ``score_threshold`` (GenEval's ``threshold``, 0.3; prompts tagged ``counting`` keep
GenEval's ``counting_threshold``, 0.9, or the score threshold where it is higher), and colours are CLIP's zero-shot
choice among GenEval's colour names on each object's crop, from the CLIP folder at ``clip_path``
(evaluation/evaluate_images.py in github.com/djghosh13/geneval)."""

from __future__ import annotations

GENEVAL = "geneval"
GENEVAL_OPTIONS = ("score_threshold", "clip_path")
DEFAULT_SCORE_THRESHOLD = 0.3  # GenEval's --options threshold
COUNTING_THRESHOLD = 0.9  # GenEval's --options counting_threshold, for prompts tagged "counting"


def geneval_source_problem(source: str, metadata_sets: tuple[str, ...]) -> str | None:
    """Why the ``geneval`` reward could not read each prompt's GenEval row from a training prompt set that is not a
    team dataset, or None: a shapes set (``metadata_sets``) and a local ``*metadata.jsonl`` carry them."""
    if source in metadata_sets or source.endswith("metadata.jsonl"):
        return None
    return (
        f"the geneval reward reads each prompt's GenEval row, which {source!r} does not carry: use a GenEval "
        f"metadata.jsonl, a team dataset of format geneval, or a shapes set ({', '.join(metadata_sets)})"
    )
