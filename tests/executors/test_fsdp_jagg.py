"""jagg under FSDP2 (two gloo ranks, full fine-tuning) takes the single-rank jagg estimator's gradient: every
optimizer update's gradient on two FSDP ranks is within the audit's E1 bound of the same step's on one rank (the
bound from native's own FSDP-vs-single difference, as the audit derives it from its floor); each update reduces its
gradient once per FSDP unit, where native reduce-scatters after every trained step's backward; and the routed
groups' probe cosines are formed from FSDP's unsharded parameters."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.executors.conftest import REPO, audit_spec
from tests.trainer.conftest import write_spec
from trainer.audit import floor_bound
from trainer.executors.gradient_cosine import gradient_cosine

TRAINED, UPDATES = 5, 2  # T = 6, K = T - 1; two optimizer updates per rollout
# One routed group of three (an interior step's gradient interpolated) and two trained steps backwarded exactly.
# jagg_reweight's spec: jagg and jagg_retain take its routing, jagg_retain its hybrid schedule (options_for).
JAGG = {"name": "jagg_reweight", "group_width": 3, "jagg_frac": 1.0, "after_first_update": "native"}
EXECUTORS = ["native", "jagg", "jagg_retain", "jagg_reweight"]
AGGREGATING = EXECUTORS[1:]


def captured(directory: Path, home: Path, ranks: int, **model: Any) -> dict[str, Any]:
    """Every update's gradient of each executor's audit step on ``ranks`` gloo ranks (saved by rank 0)."""
    spec = audit_spec(
        model=model,
        resources={"devices": ranks},
        algorithm={"sampling_steps": TRAINED + 1, "inner_epochs": UPDATES},
        executor=JAGG,
    )
    path = write_spec(directory / f"spec-{ranks}.json", spec)
    out = directory / f"gradients-{ranks}.pt"
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(ranks)]
    command = ["-m", "tests.executors.audit_gradients", "--spec", str(path), "--executors", ",".join(EXECUTORS)]
    env = {**os.environ, "SFUMATO_HOME": str(home), "OMP_NUM_THREADS": "1"}
    env.pop("SFUMATO_API_URL", None)
    argv = [*(launch if ranks > 1 else [sys.executable]), *command, "--out", str(out)]
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return torch.load(out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, sfumato_home: Path, tiny_model_dir: Path) -> dict[str, Any]:
    """The audit steps on one rank and on two FSDP ranks, from the same weights and trajectory."""
    directory = tmp_path_factory.mktemp("fsdp-jagg")
    single = captured(directory, sfumato_home, 1)
    sharded = captured(directory, sfumato_home, 2, sharding="fsdp")
    assert (single["sharding"], sharded["sharding"]) == ("single", "fsdp")
    return {"single": single["executors"], "fsdp": sharded["executors"]}


def rel_l2(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.double() - want.double()).norm() / want.double().norm())


@pytest.mark.slow
def test_jagg_under_fsdp_on_two_ranks_takes_the_single_rank_gradient(runs: dict[str, Any]) -> None:
    one, two = runs["single"], runs["fsdp"]
    # The bound of each update: the audit's E1 rule on native's own difference between the two runs.
    native = zip(two["native"]["gradients"], one["native"]["gradients"], strict=True)
    bounds = [floor_bound(rel_l2(got, want)) for got, want in native]
    assert len(bounds) == UPDATES
    for name in AGGREGATING:
        pairs = list(zip(two[name]["gradients"], one[name]["gradients"], strict=True))
        assert len(pairs) == UPDATES, name
        for (got, want), bound in zip(pairs, bounds, strict=True):
            assert rel_l2(got, want) <= bound and gradient_cosine(got.double(), want.double()) > 1 - bound, name


@pytest.mark.slow
def test_jagg_under_fsdp_reduces_each_update_once_per_unit(runs: dict[str, Any]) -> None:
    native = runs["fsdp"]["native"]["metrics"]
    units = native["executor/grad_reductions"] / (UPDATES * TRAINED)  # native: every unit, every step's backward
    assert units >= 2 and units == int(units)
    # The first update reduces once per unit; a later one is jagg's again, or native's under the hybrid schedule.
    later = {"jagg": units, "jagg_retain": TRAINED * units, "jagg_reweight": TRAINED * units}
    for name in AGGREGATING:
        metrics = runs["fsdp"][name]["metrics"]
        assert metrics["executor/grad_reductions"] == units + (UPDATES - 1) * later[name], name
        assert metrics["executor/param_all_gathers"] > 0, name  # how many: tests/trainer/test_fsdp_gathered_backward.py


@pytest.mark.slow
def test_jagg_under_fsdp_probes_its_routed_group_on_the_unsharded_parameters(runs: dict[str, Any]) -> None:
    cosines = runs["fsdp"]["jagg"]["extra"]["group_cosines"]  # rank 0's rows: a cosine of two nonzero gradients
    assert len(cosines) == UPDATES and all(math.isfinite(c) and c > 0.9 for c in cosines)
