"""The reward-hacking alarm on the job page at 1280 and 1920 px: the banner with the training reward and the
held-out rewards drawn on one chart (two axes), the Evaluations table and the chart of eval reward by checkpoint,
nothing overflowing sideways; and its marker in the jobs list. Saves
the page at both sizes under test-artifacts/screenshots, and with SFUMATO_UPDATE_README_IMAGES=1 the docs'
docs/images/reward-hacking-alarm.png (1280 wide)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from browser_support import SCREENSHOTS, Live
from page_fixtures import add_metrics, make_job

from server.models import Evaluation, EvaluationReward, Sample, User, utcnow
from server.services.reward_hacking import check_reward_hacking

pytestmark = pytest.mark.browser

DOCS_IMAGE = Path(__file__).resolve().parents[2] / "docs" / "images" / "reward-hacking-alarm.png"
HELD_OUT = "builtin:shapes-heldout"
PROMPTS = ["a small red square at the top left on a black background", "a large white circle in the center"]

LAYOUT = """() => ({
  sideways: document.documentElement.scrollWidth - document.documentElement.clientWidth,
  banner: document.querySelector("#reward-hacking h3").textContent,
  legend: [...document.querySelectorAll("#chart-reward-hacking .u-legend .u-label")].map((e) => e.textContent),
  axes: document.querySelectorAll("#chart-reward-hacking .u-axis").length,
})"""


def overfitting_job(live: Live) -> int:
    """A finished job whose reward/mean rises over 40 steps while its eval prompts' reward falls every 5 steps, and
    so do the held-out evaluations of its checkpoints."""
    with live.app.state.sessionmaker() as session:
        owner = session.get_one(User, live.world.admin.id)
        job = make_job(session, owner, None, "shapes/orange-overfit", "native", status="succeeded", attempt=1, step=40)
        add_metrics(session, job, range(1, 41))
        for step in range(0, 41, 5):
            for p, prompt in enumerate(PROMPTS):
                for seed in (0, 1):
                    reward = 0.62 - 0.004 * step + 0.01 * p - 0.005 * seed
                    session.add(Sample(job_id=job.id, attempt=1, step=step, kind="eval", prompt=prompt, seed=seed,
                                       reward=reward, image_path="none.png", width=64, height=64))  # fmt: skip
        session.flush()
        for step, held_out in ((10, 0.55), (20, 0.52), (30, 0.50), (40, 0.47)):
            task = make_job(session, owner, None, f"eval at {step}", "native", status="succeeded", kind="eval")
            evaluation = Evaluation(job_id=task.id, source_job_id=job.id, step=step, prompt_set=HELD_OUT,
                                    seeds_per_prompt=1, reported_at=utcnow(), prompts=PROMPTS)  # fmt: skip
            evaluation.rewards.append(EvaluationReward(name="prompt_color_match", mean=held_out, std=0.1, n=2,
                                                       per_prompt=[held_out, held_out]))  # fmt: skip
            session.add(evaluation)
        session.flush()
        assert check_reward_hacking(session, live.app.state.settings, job)
        session.commit()
        return job.id


@pytest.mark.parametrize("width, height", [(1280, 800), (1920, 1080)])
def test_the_alarm_banner_draws_both_curves_and_the_jobs_list_marks_the_job(
    live: Live, browser: object, login_state: str, width: int, height: int
) -> None:
    job_id = overfitting_job(live)
    context = browser.new_context(storage_state=login_state, viewport={"width": width, "height": height})  # type: ignore[attr-defined]
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.goto(f"{live.url}/jobs/{job_id}")
    page.wait_for_selector("#chart-reward-hacking .uplot")
    page.wait_for_selector("#chart-checkpoint-evals .uplot")
    seen = page.evaluate(LAYOUT)
    rows = page.locator("#evaluations tbody tr").count()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / f"reward-hacking-alarm-{width}.png"
    page.screenshot(path=str(shot), full_page=False)
    page.screenshot(path=str(SCREENSHOTS / f"reward-hacking-job-page-{width}.png"), full_page=True)
    if width == 1280 and os.environ.get("SFUMATO_UPDATE_README_IMAGES"):
        shutil.copyfile(shot, DOCS_IMAGE)
    page.goto(f"{live.url}/jobs")
    marker = page.locator(f"#job-{job_id} .alarm-pill").inner_text()
    listed_sideways = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    page.screenshot(path=str(SCREENSHOTS / f"reward-hacking-jobs-list-{width}.png"))
    context.close()
    assert rows == 4 and listed_sideways <= 1
    assert seen["sideways"] <= 1, seen
    assert seen["banner"].startswith("Reward hacking?"), seen
    assert "training reward/mean" in seen["legend"] and "in-training eval" in seen["legend"], seen
    assert seen["axes"] == 3, seen  # step, the training reward's axis, the held-out reward's axis
    assert marker == "reward hacking?"
    assert errors == []
