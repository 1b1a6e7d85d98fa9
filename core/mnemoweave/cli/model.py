"""The `model` commands: build the embedding models from their packaged weights, list them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from mnemoweave.cli.main import _emit, cli, json_option
from mnemoweave.config import load_config

if TYPE_CHECKING:
    from mnemoweave.embed import BuildResult


@cli.group()
def model() -> None:
    """Embedding models: build them from their packaged weights, list them."""


@model.command("build")
@click.argument("names", nargs=-1)
@click.option("--force", is_flag=True, help="Rebuild even if the cached files are valid.")
def model_build(names: tuple[str, ...], force: bool) -> None:
    """Convert packaged weights into model.onnx + tokenizer.json (default: the configured ones)."""
    from mnemoweave.embed import build_models

    wanted = list(names) or load_config().models()
    if not wanted:
        click.echo("embedder is 'none': nothing to build")
        return
    for result in build_models(wanted, force=force):
        click.echo(said(result))


def said(result: BuildResult) -> str:
    """One model's build, as `model build` (and `install`) reports it."""
    state = "built" if result.built else "up to date"
    parity = (
        ""
        if result.parity_min_cosine is None
        else f", parity min cosine {result.parity_min_cosine:.6f}"
    )
    return f"{result.name}: {state} in {result.seconds:.1f}s{parity} -> {result.path}"


@model.command("list")
@json_option
def model_list(as_json: bool) -> None:
    """Registered models, whether each is built, and which one is configured."""
    from mnemoweave.embed import built, registered
    from mnemoweave.plugins import make_plugin_manager

    configured, pm = load_config().models(), make_plugin_manager()
    rows = [
        {
            "name": spec.name,
            "dim": spec.dim,
            "description": spec.description,
            "built": built(spec.name, pm),
            "default": spec.name in configured,
        }
        for spec in registered(pm).values()
    ]
    if as_json:
        _emit({"models": rows})
        return
    for row in rows:
        mark = "*" if row["default"] else " "
        click.echo(
            f"{mark} {row['name']:<10} {'built' if row['built'] else 'not built':<9} "
            f"dim {row['dim']:<4} {row['description']}"
        )
