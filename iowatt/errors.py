"""Bad input ends in one clear message on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USAGE = 2


class UserError(Exception):
    """Raised by commands for input that cannot be used; the message is shown as is."""


def _user_error_types() -> tuple[type[BaseException], ...]:
    from pydantic import ValidationError

    from iowatt.models.catalog import CatalogError
    from iowatt.models.goodput import NoProgressError
    from iowatt.models.units import UnitError
    from iowatt.output.files import OutputError
    from iowatt.scenarios.loader import ScenarioError
    from iowatt.simulator.flows import EngineError
    from iowatt.simulator.workloads import WorkloadConfigError

    return (UserError, OutputError, ScenarioError, CatalogError, UnitError, ValidationError, WorkloadConfigError, EngineError,
            NoProgressError)


def fail(message: str) -> None:
    import typer

    print(f"error: {message}", file=sys.stderr)
    raise typer.Exit(EXIT_USAGE)


def user_errors(func: F) -> F:
    """Turn the known kinds of bad input into `error: ...` and exit status 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except _user_error_types() as error:
            fail(str(error))
        except OSError as error:
            fail(f"{getattr(error, 'filename', '') or ''}: {error.strerror or error}".lstrip(": "))

    return wrapper  # type: ignore[return-value]
