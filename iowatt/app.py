"""The Typer classes of the `iowatt` command: help shows no type beside a flag.

Typer prints a type placeholder beside every option, `<bool>` even beside
flags (--help included), which take no value; the list options name their
own placeholders (PATH=VALUE, KEY=V1,V2,...) where they are declared.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption


def _blank_flags(params: list[Any]) -> list[Any]:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    return params


class Command(TyperCommand):
    def get_params(self, ctx: typer.Context) -> list[Any]:
        return _blank_flags(super().get_params(ctx))


class Group(TyperGroup):
    def get_params(self, ctx: typer.Context) -> list[Any]:
        return _blank_flags(super().get_params(ctx))


class App(typer.Typer):
    """typer.Typer whose groups and commands use the classes above."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cls=Group, **kwargs)

    def command(self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return super().command(name, cls=cls or Command, **kwargs)


OutputOption = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write here instead of stdout: a file (replaced atomically), a FIFO or terminal (as a stream), or '-'."),
]
