"""Evaluation through the whole platform: `sfumato eval JOB --prompts FILE --reward R --wait` on the live platform's
finished tiny job queues an eval job, the real worker runs the trainer's eval task on the job's final model, its
reporter sends the scores, and `sfumato eval show` prints the figures the platform computed from them."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from client_harness import TinyJobs, cli_env, run_cli
from platform_harness import Platform

PROMPTS = ["a red apple", "a blue square", "a green ball"]


def test_eval_wait_reports_the_figures_and_show_prints_each_prompts_scores(
    live_platform: Platform, tiny_jobs: TinyJobs, tmp_path: Path
) -> None:
    env = cli_env(live_platform, tmp_path)
    prompts = tmp_path / "held-out.txt"
    prompts.write_text("\n".join(PROMPTS) + "\n")
    argv = ["eval", str(tiny_jobs.native_id), "--prompts", str(prompts), "--reward", "brightness", "--seeds", "2"]
    result = run_cli(env, *argv, "--reward", "prompt_color_match", "--wait", "--json", timeout=320)
    assert result.returncode == 0, f"{result.stderr}\n{live_platform.output()}"
    [evaluation] = json.loads(result.stdout)
    assert (evaluation["status"], evaluation["prompt_set"], evaluation["step"]) == ("succeeded", "held-out.txt", 3)
    assert [(r["name"], r["n"]) for r in evaluation["rewards"]] == [("brightness", 6), ("prompt_color_match", 6)]

    shown = run_cli(env, "eval", "show", str(tiny_jobs.native_id), "--evaluation", str(evaluation["id"]), "--json")
    assert shown.returncode == 0, shown.stderr
    detail = json.loads(shown.stdout)
    assert [row["prompt"] for row in detail["prompts"]] == PROMPTS
    per_prompt = [row["scores"]["brightness"] for row in detail["prompts"]]
    assert abs(statistics.fmean(per_prompt) - detail["rewards"][0]["mean"]) < 1e-9  # equal seeds per prompt

    table = run_cli(env, "eval", "show", str(tiny_jobs.native_id))
    assert table.returncode == 0, table.stderr
    assert "held-out.txt" in table.stdout and "reward-hacking alarm: quiet" in table.stdout
