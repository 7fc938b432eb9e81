"""Options shared by the commands that read a recipe directory from an untrusted source."""

from __future__ import annotations

import os

import click

from vllm_recipes.catalog.yamlsource import ENV_FOLLOW_SYMLINKS


def _set_follow(_ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    # the loader (and the server's worker processes) read the choice from the environment
    if value:
        os.environ[ENV_FOLLOW_SYMLINKS] = "1"


follow_symlinks_option = click.option(
    "--follow-symlinks", is_flag=True, expose_value=False, is_eager=True, callback=_set_follow,
    help="Read recipe files that are symbolic links to files outside the recipes directory "
         "(refused by default, with a finding).")
