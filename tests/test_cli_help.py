"""Help names what an option takes, and a command given two inputs says so (issue 18 item 10).

Oracle: the help text itself, for every command and group of the app.
"""

from __future__ import annotations

import re

import click
import pytest
from typer.main import get_command
from typer.testing import CliRunner

from iowatt.cli import app

runner = CliRunner()


def command_paths() -> list[list[str]]:
    paths: list[list[str]] = [[]]
    pending = [([], get_command(app))]
    while pending:
        prefix, command = pending.pop()
        for name, sub in getattr(command, "commands", {}).items():
            paths.append([*prefix, name])
            pending.append(([*prefix, name], sub))
    return sorted(paths)


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "iowatt")
def test_help_has_no_type_placeholders(path):
    """Before: `--dry-run <bool>`, `--set <list[str]>`: flags take no value, list options take one PATH=VALUE each time."""
    result = runner.invoke(app, [*path, "--help"], terminal_width=120)
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.stdout and "<list" not in result.stdout, result.stdout


def test_list_options_name_their_values():
    text = runner.invoke(app, ["sweep", "--help"], terminal_width=140).stdout
    assert "PATH=VALUE" in text and "KEY=V1,V2,..." in text and "KEY=LO:HI" in text


def test_validate_refuses_a_table_and_a_bundle_together(tmp_path):
    """Before: TABLE was silently ignored when --bundle was given."""
    result = runner.invoke(app, ["validate", "scenarios/validation/published.yaml", "--bundle", str(tmp_path), "--profile", str(tmp_path / "p.yaml")])
    assert result.exit_code == 2 and "expected one of them" in result.stderr and "found both" in result.stderr


# Rich reads `[` followed by a letter, `#`, `/` or `@` as the start of a markup tag and drops the whole bracket
# (rich.markup's tag pattern); help text must escape it (`\\[low, high]`), or the words vanish from --help.
_MARKUP_TAG = re.compile(r"(?<!\\)\[[a-z#/@][^\[\]]*\]")


def _help_texts(command: click.Command) -> list[tuple[str, str]]:
    texts = [(command.name or "iowatt", command.help or "")]
    texts += [(f"{command.name} {p.name}", getattr(p, "help", None) or "") for p in command.params]
    for sub in getattr(command, "commands", {}).values():
        texts += _help_texts(sub)
    return texts


def test_help_text_has_no_bracket_rich_would_swallow():
    """Oracle: rich.markup's tag syntax. Before: `compare --help` printed "each value as `value `" - the
    `[low, high]` was read as a style tag and dropped."""
    swallowed = [(where, m.group(0)) for where, text in _help_texts(get_command(app)) for m in _MARKUP_TAG.finditer(text)]
    assert not swallowed, swallowed
