"""An example third-party plugin, installed through the `mnemoweave` entry-point group.

It tags every turn that mentions a ticket (ABC-123) as a mission, adds a nudge line
reminding the agent of the ticket convention, and a `mnemoweave tickets TEXT` command.
"""

import re

import click

from mnemoweave.hookspecs import hookimpl
from mnemoweave.model import Block, Classification, Line

TICKET = re.compile(r"\b[A-Z]{2,5}-\d+\b")


@hookimpl
def classify_turn(turn):
    if TICKET.search(turn.text):
        return Classification("mission", 0.99)
    return None


@hookimpl
def weave_blocks(query):
    if TICKET.search(query):
        return [Block("nudge", (Line("Link the ticket in the commit message", "example:1"),))]
    return None


@hookimpl
def register_commands(cli):
    @cli.command()
    @click.argument("text")
    def tickets(text):
        """The ticket ids (ABC-123) TEXT mentions."""
        click.echo(" ".join(TICKET.findall(text)) or "no tickets")
