"""The submit form offers the forward-process algorithms (DiffusionNFT, AWM, DGPO) and shows only the options
the chosen algorithm's family reads: the GRPO family's step and ratio for its algorithms, each forward
algorithm's own β or weighting for it (trainer/spec/forward_family.py)."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import csrf_of

from server.models import Job

GRPO_STEP = ("algorithm.noise_level", "algorithm.kl_form", "algorithm.init_same_noise", "algorithm.guard")
FORWARD_OWN = {"diffusion_nft": "algorithm.nft_beta", "awm": "algorithm.awm_weighting", "dgpo": "algorithm.dpo_beta"}


def form_for(client: TestClient, algorithm: str) -> str:
    """The form re-shown (an empty name is refused) with ``algorithm`` chosen."""
    token = csrf_of(client.get("/submit").text)
    form = {"csrf_token": token, "name": "", "algorithm.name": algorithm, "reward.0.name": "brightness"}
    return client.post("/submit", data=form).text


def shown(html: str, field: str) -> bool:
    wrapper = re.search(r'<div [^>]*>\s*<label for="f-' + re.escape(field) + '"', html)
    assert wrapper, field
    return " hidden>" not in wrapper.group(0)


def test_the_algorithm_choice_offers_the_forward_algorithms(client: TestClient) -> None:
    choice = client.get("/submit").text.split('name="algorithm.name"', 1)[1].split("</select>", 1)[0]
    assert all(f'<option value="{name}"' in choice for name in FORWARD_OWN)


@pytest.mark.parametrize("algorithm", list(FORWARD_OWN))
def test_a_forward_algorithm_shows_its_own_option_and_hides_the_grpo_step(client: TestClient, algorithm: str) -> None:
    html = form_for(client, algorithm)
    assert shown(html, FORWARD_OWN[algorithm])
    assert not any(shown(html, field) for field in GRPO_STEP)
    assert not any(shown(html, field) for name, field in FORWARD_OWN.items() if name != algorithm)
    assert shown(html, "algorithm.clip_range") == (algorithm != "diffusion_nft")  # NFT's loss has no ratio


def test_a_grpo_algorithm_shows_the_grpo_step_and_hides_the_forward_options(client: TestClient) -> None:
    html = form_for(client, "flow_grpo")
    assert all(shown(html, field) for field in GRPO_STEP)
    assert not any(shown(html, field) for field in FORWARD_OWN.values())


def test_the_shapes_demo_switched_to_diffusion_nft_is_queued_without_its_grpo_step_options(
    client: TestClient, app: FastAPI
) -> None:
    """The preset's noise_level, clip_range and kl_form stay in the hidden fields (the spec would refuse them
    for diffusion_nft); the form leaves them out."""
    token = csrf_of(client.get("/submit").text)
    form = {"csrf_token": token, "name": "nft", "algorithm.name": "diffusion_nft", "algorithm.nft_beta": "0.5"}
    form |= {"algorithm.noise_level": "0.7", "algorithm.clip_range": "0.0001", "algorithm.kl_form": "flow_grpo"}
    form |= {"reward.0.name": "brightness", "resources.device_type": "cuda"}  # the test host has GPUs only
    response = client.post("/submit", data=form)
    assert response.status_code == 303, response.text
    with app.state.sessionmaker() as session:
        job = session.get(Job, int(response.headers["location"].rsplit("/", 1)[-1]))
        assert job is not None
        algorithm = job.spec["algorithm"]
        assert (algorithm["name"], algorithm["nft_beta"], algorithm["clip_range"]) == ("diffusion_nft", 0.5, None)
