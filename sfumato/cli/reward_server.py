"""`sfumato reward-server`: serve one built-in or plugin reward over the reward protocol (docs/rewards.md).

The server lives in the trainer room (it loads the reward with torch); it is imported inside the command,
so `import sfumato.cli` stays light.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from sfumato.cli.common import fail


def reward_server(
    reward: Annotated[str, typer.Option(help="the reward to serve: a built-in name or a plugin's")],
    path: Annotated[str | None, typer.Option(help="the weights directory of a model-based reward")] = None,
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="port to listen on; 0 picks a free one (printed as 'listening on')")
    ] = 0,
    device: Annotated[str, typer.Option(help="where the reward runs: cpu, cuda or cuda:<index>")] = "cpu",
    max_batch: Annotated[int, typer.Option(min=1, max=1024, help="most images scored in one batch")] = 32,
    max_wait_ms: Annotated[
        float, typer.Option(min=0, max=10_000, help="how long a batch waits for other callers' images to join it")
    ] = 10.0,
    token_env: Annotated[
        str, typer.Option(help="environment variable holding the service token (unset: no service token)")
    ] = "SFUMATO_REWARD_SERVICE_TOKEN",
    auth_url: Annotated[
        str | None, typer.Option(help="also accept tokens for which GET <auth-url> with them answers 200")
    ] = None,
    outage_window_s: Annotated[
        float | None,
        typer.Option(
            min=0,
            max=86400,
            help="while <auth-url> cannot be asked, keep serving tokens it accepted within this many seconds "
            "(default: a trainer's default reward.outage_window_s, 300)",
        ),
    ] = None,
) -> None:
    """Serve a reward to remote trainers, batching concurrent callers together."""
    if not (device == "cpu" or device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit())):
        raise fail(f"--device: {device!r}; allowed: cpu, cuda, cuda:<index>", 2)
    from trainer.reward_server.serve import ServerOptions, serve

    options = ServerOptions(reward, path, host, port, device, max_batch, max_wait_ms, token_env, auth_url)
    if outage_window_s is not None:
        options = replace(options, outage_window_s=outage_window_s)
    try:
        serve(options)
    except (ValueError, OSError) as exc:
        raise fail(str(exc), 2) from None
