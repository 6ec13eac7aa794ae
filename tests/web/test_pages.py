"""Pages through TestClient: login and sessions, CSRF, escaping of hostile text, 404s, form errors, fragments."""

from __future__ import annotations

import os
import re
import socket
import threading

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import XSS, World, csrf_of
from sqlalchemy import func, select, update

from server.api.page_session import COOKIE
from server.models import Host, Job, LogLine, Sample
from server.services.reward_reachability import answer_pending_probes

PAGES = ["/jobs", "/jobs/rows", "/submit", "/submit?mode=json", "/submit?preset=tiny-native", "/hosts", "/compare"]


def job_count(app: FastAPI) -> int:
    with app.state.sessionmaker() as session:
        return session.scalar(select(func.count()).select_from(Job)) or 0


@pytest.mark.parametrize("path", PAGES)
def test_pages_need_login(anon: TestClient, path: str) -> None:
    response = anon.get(path)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/login?next=")


def test_htmx_poll_without_session_gets_hx_redirect(anon: TestClient) -> None:
    response = anon.get("/jobs/rows", headers={"HX-Request": "true"})
    assert response.status_code == 401
    assert response.headers["hx-redirect"].startswith("/login")


@pytest.mark.parametrize("path", PAGES)
def test_pages_render(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200, response.text
    assert "text/html" in response.headers["content-type"]


def test_session_cookie_is_signed_httponly_and_lax(anon: TestClient, world: World) -> None:
    token = csrf_of(anon.get("/login").text)
    response = anon.post("/login", data={"token": world.token, "csrf_token": token})
    assert response.status_code == 303
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=") and "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert anon.get("/jobs").status_code == 200
    forged = anon.cookies[COOKIE][:-2] + "xx"
    anon.cookies.clear()
    anon.cookies.set(COOKIE, forged)  # a forged signature is no session
    assert anon.get("/jobs").status_code == 303


def test_wrong_password_shows_the_form_again(anon: TestClient) -> None:
    token = csrf_of(anon.get("/login").text)
    response = anon.post("/login", data={"username": "ada", "password": "nope", "csrf_token": token})
    assert response.status_code == 401
    assert "Wrong username or password" in response.text


def test_login_refuses_an_offsite_next(anon: TestClient, world: World) -> None:
    token = csrf_of(anon.get("/login").text)
    data = {"token": world.token, "csrf_token": token, "next": "//evil.example/"}
    assert anon.post("/login", data=data).headers["location"] == "/jobs"


def test_post_without_csrf_token_is_refused(client: TestClient, world: World, app: FastAPI) -> None:
    before = job_count(app)
    assert client.post("/submit", data={"name": "x"}).status_code == 403
    assert client.post("/submit", data={"name": "x", "csrf_token": "forged"}).status_code == 403
    assert client.post(f"/jobs/{world.running.id}/cancel").status_code == 403
    assert client.post("/logout").status_code == 403
    assert job_count(app) == before


def test_csrf_header_is_accepted_like_htmx_sends_it(client: TestClient, world: World) -> None:
    token = csrf_of(client.get("/jobs").text)
    response = client.post(f"/jobs/{world.queued[0].id}/cancel", headers={"X-CSRF-Token": token})
    assert response.status_code == 303
    assert "cancelled" in client.get(f"/jobs/{world.queued[0].id}").text


@pytest.mark.parametrize("path", ["/jobs", "/jobs/{hostile}", "/jobs/{running}", "/jobs/{running}/gallery"])
def test_hostile_text_is_escaped(client: TestClient, world: World, path: str) -> None:
    assert world.hostile is not None
    html = client.get(path.format(hostile=world.hostile.id, running=world.running.id)).text
    assert XSS not in html
    assert "&lt;script&gt;alert(" in html


def test_log_lines_are_escaped_in_the_follow_fragment(client: TestClient, world: World) -> None:
    html = client.get(f"/jobs/{world.running.id}/logs?after=0").text
    assert "prompt &lt;script&gt;" in html and XSS not in html
    assert 'hx-trigger="every 2s"' in html  # still running: the next poll is in the fragment


def test_unknown_job_is_a_404_page(client: TestClient) -> None:
    for path in ("/jobs/999999", "/jobs/999999/gallery", "/jobs/999999/header"):
        response = client.get(path)
        assert response.status_code == 404
        assert "404" in response.text and "<html" in response.text


def test_an_id_beyond_the_database_integer_range_is_refused_not_a_server_error(client: TestClient) -> None:
    huge = 10**20
    for path in (f"/jobs/{huge}", f"/jobs/{huge}/gallery", f"/jobs/{huge}/header"):
        assert client.get(path).status_code == 422


def test_submit_error_is_shown_next_to_its_field_and_nothing_is_stored(client: TestClient, app: FastAPI) -> None:
    before = job_count(app)
    token = csrf_of(client.get("/submit").text)
    response = client.post(
        "/submit",
        data={"csrf_token": token, "name": "bad", "algorithm.group_size": "1", "reward.0.name": "brightness"},
    )
    assert response.status_code == 422
    match = re.search(r'<small class="field-error" id="e-algorithm.group_size"[^>]*>([^<]+)</small>', response.text)
    assert match and match.group(1) == "Input should be greater than or equal to 2"
    assert 'id="f-algorithm.group_size" name="algorithm.group_size" value="1"' in response.text
    assert job_count(app) == before


def test_submit_creates_the_job_through_the_service(client: TestClient, app: FastAPI) -> None:
    token = csrf_of(client.get("/submit").text)
    form = {"csrf_token": token, "name": "web-job", "algorithm.total_steps": "7", "reward.0.name": "colorfulness"}
    form["resources.device_type"] = "cuda"  # the test host has GPUs only
    response = client.post("/submit", data=form)
    assert response.status_code == 303
    job_id = int(response.headers["location"].rsplit("/", 1)[-1])
    with app.state.sessionmaker() as session:
        job = session.get(Job, job_id)
        assert job is not None and job.status == "queued" and job.owner_id is not None
        assert job.spec["algorithm"]["total_steps"] == 7
        remote_and_service = {"url": None, "batch_size": None, "timeout_s": None, "retries": None, "service": None}
        remote_and_service["outage_window_s"] = None
        remote_and_service |= dict.fromkeys(("judge_model", "rubric", "parser", "score_field"))  # vlm_judge's
        remote_and_service |= dict.fromkeys(("score_threshold", "clip_path"))  # geneval's, with a detector
        assert job.spec["reward"] == [{"name": "colorfulness", "weight": 1.0, "path": None, **remote_and_service}]


def test_json_tab_reports_malformed_json(client: TestClient, app: FastAPI) -> None:
    before = job_count(app)
    token = csrf_of(client.get("/submit?mode=json").text)
    response = client.post("/submit", data={"csrf_token": token, "mode": "json", "spec_json": "{nope"})
    assert response.status_code == 422 and "malformed JSON" in response.text
    response = client.post(
        "/submit", data={"csrf_token": token, "mode": "json", "spec_json": '{"executor": {"name": "warp"}}'}
    )
    assert response.status_code == 422 and "<code>executor.name</code>" in response.text
    assert job_count(app) == before


def test_clone_fills_the_form_from_the_job(client: TestClient, world: World) -> None:
    html = client.get(f"/submit?from={world.finished[0].id}").text
    assert f"a clone of job #{world.finished[0].id}" in html
    assert 'name="name" value="sd3-brightness-lean_retain"' in html


def test_compare_names_the_differing_fields_and_the_speedup(client: TestClient, world: World) -> None:
    ids = [world.running.id, *(j.id for j in world.finished)]
    html = client.get("/compare?" + "&".join(f"job={i}" for i in ids)).text
    assert "executor.name" in html and "lean_reweight" in html
    assert "1.60\u00d7" in html  # lean_retain's samples/s over native's


def test_gallery_step_fragment_swaps_columns(client: TestClient, world: World) -> None:
    html = client.get(f"/jobs/{world.running.id}/gallery/grid?i=0").text
    assert 'data-current-step="0"' in html and "step 25" not in html
    image = client.get(re.search(r'src="(/api/v1/jobs/\d+/samples/\d+/image\?thumb=true)"', html).group(1))  # type: ignore[union-attr]
    assert image.status_code == 200 and image.headers["content-type"] == "image/webp"


def test_finished_job_fragments_carry_no_next_poll(client: TestClient, world: World) -> None:
    done = world.finished[0].id
    assert "hx-trigger" not in client.get(f"/jobs/{done}/header").text
    assert "log-poll" not in client.get(f"/jobs/{done}/logs?after=999999").text
    page = client.get(f"/jobs/{done}").text
    assert 'data-live="false"' in page and "hx-trigger" not in page.split('id="job-header"', 1)[1].split(">", 1)[0]


def test_first_log_lines_delete_the_empty_placeholder(client: TestClient, world: World, app: FastAPI) -> None:
    queued = world.queued[0].id
    assert 'id="log-empty"' in client.get(f"/jobs/{queued}").text
    assert "hx-swap-oob" not in client.get(f"/jobs/{queued}/logs?after=0").text  # nothing yet: keep it
    with app.state.sessionmaker() as session:
        session.add(LogLine(job_id=queued, attempt=0, text="hello"))
        session.commit()
    fragment = client.get(f"/jobs/{queued}/logs?after=0").text
    assert '<div id="log-empty" hx-swap-oob="delete"></div>' in fragment and "hello" in fragment


def test_thumbnail_is_cached_on_disk_beside_the_sample(client: TestClient, world: World, app: FastAPI) -> None:
    html = client.get(f"/jobs/{world.running.id}/gallery/grid?i=0").text
    url = re.search(r'src="(/api/v1/jobs/\d+/samples/(\d+)/image\?thumb=true)"', html)
    assert url
    first = client.get(url.group(1))
    root = app.state.settings.resolved_artifact_root()
    with app.state.sessionmaker() as session:
        sample = session.get(Sample, int(url.group(2)))
        assert sample is not None
        source = root / sample.image_path
    cached = source.parent / ".thumbs" / f"{source.name}.192.webp"
    assert cached.is_file() and cached.resolve().is_relative_to(root)
    assert cached.read_bytes() == first.content and first.content[8:12] == b"WEBP"
    cached.write_bytes(b"RIFF\0\0\0\0WEBPcached")  # newer than the sample: served as it is
    assert client.get(url.group(1)).content == b"RIFF\0\0\0\0WEBPcached"
    os.utime(source, (cached.stat().st_mtime + 10,) * 2)  # the sample changed: made again
    assert client.get(url.group(1)).content == first.content


def test_compare_shows_the_analytical_bound_and_measured_over_bound(client: TestClient, world: World) -> None:
    ids = [world.running.id, *(j.id for j in world.finished)]
    html = client.get("/compare?" + "&".join(f"job={i}" for i in ids)).text
    bounds = re.findall(r'<td class="num bound">([^<]+)</td>', html)
    # LoRA (b = 1), T = 10, K = 9: native 10 + 2·9 = 28, lean 10 + 9 = 19, so 1.47 times.
    assert bounds == ["1.00\u00d7", "1.47\u00d7", "1.47\u00d7"]
    ratios = re.findall(r'<td class="num of-bound">([^<]+)</td>', html)
    assert ratios == ["100 %", "109 %", "95 %"]  # 1.60 / 1.47 and 1.40 / 1.47


def test_cancelling_a_job_removing_a_member_and_revoking_a_token_ask_first(client: TestClient, world: World) -> None:
    job = client.get(f"/jobs/{world.running.id}").text
    team = client.get("/teams/1").text
    settings = client.get("/settings").text
    assert re.search(r'action="/jobs/\d+/cancel" class="inline" data-confirm="Cancel job', job)
    assert re.search(r'action="/teams/1/members/\d+/remove" class="inline" data-confirm="Remove ', team)
    assert re.search(r'action="/settings/tokens/\d+/revoke" class="inline" data-confirm="Revoke token ', settings)


def test_later_log_lines_do_not_ask_to_delete_the_placeholder_again(
    client: TestClient, world: World, app: FastAPI
) -> None:
    queued = world.queued[0].id
    with app.state.sessionmaker() as session:
        session.add_all([LogLine(job_id=queued, attempt=0, text="one"), LogLine(job_id=queued, attempt=0, text="two")])
        session.commit()
        first = session.scalar(select(func.min(LogLine.id)).where(LogLine.job_id == queued))
    later = client.get(f"/jobs/{queued}/logs?after={first}").text
    assert "two" in later and "hx-swap-oob" not in later  # htmx would report oobErrorNoTarget


def test_a_failed_job_s_header_reads_its_root_cause_first_then_the_traceback(client: TestClient, world: World) -> None:
    assert world.hostile is not None
    html = client.get(f"/jobs/{world.hostile.id}").text
    cause = html.index('<p class="notice bad root-cause" role="alert">')
    assert (
        html[cause:]
        .split("</p>", 1)[0]
        .endswith("<strong>OSError: cannot reach the model hub: name or service not known</strong>")
    )
    assert cause < html.index("Traceback (most recent call last):")


def test_the_submit_error_banner_lists_every_problem_linked_to_its_field(client: TestClient) -> None:
    token = csrf_of(client.get("/submit").text)
    form = {"csrf_token": token, "name": "bad", "algorithm.group_size": "1", "algorithm.learning_rate": "-1"}
    response = client.post("/submit", data={**form, "reward.0.name": "brightness"})
    banner = response.text.split('id="form-errors"', 1)[1].split("</div>", 1)[0]
    assert "2 problems" in banner
    for field in ("algorithm.group_size", "algorithm.learning_rate"):
        assert f'<a href="#f-{field}"><code>{field}</code></a>: ' in banner


def _shown(html: str, field: str) -> bool:
    """Whether the form shows `field`: its wrapper has no `hidden` attribute."""
    wrapper = re.search(r'<div [^>]*>\s*<label for="f-' + re.escape(field) + '"', html)
    assert wrapper, field
    return " hidden>" not in wrapper.group(0)


def test_the_submit_form_shows_only_the_chosen_family_algorithm_and_executor_options(client: TestClient) -> None:
    token = csrf_of(client.get("/submit").text)
    chosen = {"model.family": "wan", "algorithm.name": "flash_grpo", "executor.name": "jagg"}
    form = {"csrf_token": token, "name": "", **chosen, "reward.0.name": "brightness"}  # an empty name: re-shown
    html = client.post("/submit", data=form).text
    for field in ("model.num_frames", "algorithm.candidate_steps", "executor.group_width"):
        assert _shown(html, field), field
    for field in ("algorithm.window_size", "executor.max_retained_graphs", "executor.buffer_regime"):
        assert not _shown(html, field), field
    first = client.get("/submit").text  # the shapes demo: sd3, native
    assert not _shown(first, "model.num_frames") and not _shown(first, "executor.group_width")
    assert _shown(first, "model.finetune")


def test_a_hidden_option_s_value_is_not_part_of_the_spec(client: TestClient, app: FastAPI) -> None:
    token = csrf_of(client.get("/submit").text)
    form = {"csrf_token": token, "name": "switched", "executor.name": "native", "executor.group_width": "8"}
    form |= {"model.num_frames": "81", "reward.0.name": "brightness", "resources.device_type": "cuda"}
    response = client.post("/submit", data=form)  # jagg's and wan's options, left behind by a switch back
    # every executor's checkbox (audit_first_step) sends its value, so native's spec holds it
    assert response.status_code == 303, response.text
    with app.state.sessionmaker() as session:
        job = session.get(Job, int(response.headers["location"].rsplit("/", 1)[-1]))
        assert job is not None and job.spec["executor"] == {"name": "native", "audit_first_step": False}
        assert job.spec["model"]["num_frames"] is None


def test_a_hub_model_submitted_while_every_worker_is_offline_is_warned_about_on_its_page(
    client: TestClient, app: FastAPI
) -> None:
    with app.state.sessionmaker() as session:
        session.execute(update(Host).values(hub_offline=True))  # every worker started with HF_HUB_OFFLINE=1
        session.commit()
    token = csrf_of(client.get("/submit").text)
    form = {"csrf_token": token, "name": "hub", "model.path": "stabilityai/stable-diffusion-3.5-medium"}
    form |= {"reward.0.name": "brightness", "resources.device_type": "cuda"}
    response = client.post("/submit", data=form)
    assert response.status_code == 303, response.text
    page = client.get(response.headers["location"]).text
    assert 'id="hub-warning"' in page and "HF_HUB_OFFLINE" in page


def test_a_new_job_form_starts_from_the_readme_first_job(client: TestClient) -> None:
    html = client.get("/submit").text
    assert "the shapes-demo preset" in html
    assert 'name="model.path" value="builtin:shapes"' in html


def test_a_running_job_s_header_refreshes_with_the_charts_and_counts_its_eval_steps(
    client: TestClient, world: World
) -> None:
    header = client.get(f"/jobs/{world.running.id}/header").text
    assert 'hx-trigger="sfumato:charts-polled from:body"' in header  # charts.js sends it after each poll
    assert f'<a href="/jobs/{world.running.id}/gallery">6 eval steps</a>' in header


def test_a_remote_reward_whose_server_does_not_answer_reads_unreachable_on_the_job_s_page_once_probed(
    client: TestClient,
) -> None:
    settings = client.app.state.settings  # type: ignore[attr-defined]
    settings.allow_private_urls = True  # the embedded platform's rule: a reward server on this machine
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    token = csrf_of(client.get("/submit").text)
    form = {"csrf_token": token, "name": "remote", "reward.0.name": "remote", "reward.0.url": url}
    form["resources.device_type"] = "cuda"
    response = client.post("/submit", data=form)
    assert response.status_code == 303, response.text
    assert "reward.0.url: checking whether the reward server answers" in client.get(response.headers["location"]).text
    answer_pending_probes(client.app.state.sessionmaker, settings, threading.Event())  # type: ignore[attr-defined]
    page = client.get(response.headers["location"]).text
    assert 'id="reward-reachability-0"' in page and "reward.0.url: unreachable." in page
