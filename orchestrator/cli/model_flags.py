"""Command-line flags made from a settings model, so a setting is declared once (in the model) for every caller.

`settings_flags(Model)` adds one `--name` option per field of `Model` to a typer command: the flag is the field's
name with '-' for '_' (so a recipe's `think_cap_s` is `--think-cap-s`), its help is the field's description
and the model's default is quoted there. Options the user did not give are not passed on, so the model's own
defaults apply and are never repeated here; the command receives what was given as `flags` and turns it into
the model with `settings_from_flags`, whose errors name the flag, the value and what was expected.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, TypeVar

import typer
from pydantic import BaseModel, ValidationError

from orchestrator.cli.output import fail
from recipes.errors import RecipeError

M = TypeVar("M", bound=BaseModel)


def flag_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def settings_flags(
    model: type[BaseModel], *, exclude: Iterable[str] = (), defaults: dict[str, Any] | None = None
) -> Callable[[Callable[..., None]], Any]:
    """Decorate a command taking `flags: dict[str, Any]` with one option per field of `model` (but `exclude`).

    `defaults` are the command's own defaults for fields the model requires (a recipe must say how long
    its window is; a one-off command may assume): passed on unless the flag is given, and shown in the help."""
    skipped = set(exclude)
    own_defaults = dict(defaults or {})
    fields = {name: info for name, info in model.model_fields.items() if name not in skipped}

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(command)
        def wrapper(**values: Any) -> None:
            options = {name: values.pop(name) for name in fields}
            given = {name: value for name, value in options.items() if value is not None}
            command(**values, flags={**own_defaults, **given})

        own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "flags"]
        added = [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_option(name, info, own_defaults)
            )
            for name, info in fields.items()
        ]
        wrapper.__signature__ = inspect.Signature([*own, *added])  # type: ignore[attr-defined]  # typer reads the signature a wrapper declares
        wrapper.__annotations__ = {p.name: p.annotation for p in [*own, *added]}
        del wrapper.__wrapped__  # typer must read the signature above, not the command's
        return wrapper

    return decorate


def settings_from_flags(model: type[M], values: dict[str, Any], command: str) -> M:
    """`values` (flags given, plus what the command fills in) as `model`; a bad one exits with its flag named."""
    try:
        return model.model_validate(values)
    except ValidationError as error:
        problems = [(flag_name("_".join(map(str, e["loc"]))), e.get("input"), e["msg"]) for e in error.errors()]
        fail(RecipeError(f"infersweep {command}", problems, what="flags"))


def _option(name: str, info: Any, defaults: dict[str, Any]) -> Any:
    """The typer annotation of one field's option: its type (a Literal as a choice), help and default shown."""
    kind, _ = _flag_type(info.annotation)
    if name in defaults:
        shown = f" (default here: {_shown(defaults[name])})"
    else:
        shown = "" if info.is_required() else f" (default: {_shown(info.get_default(call_default_factory=True))})"
    option = typer.Option(
        flag_name(name) if kind is not bool else f"{flag_name(name)}/--no-{name.replace('_', '-')}",
        help=f"{info.description or ''}{shown}",
        show_default=False,
    )
    return Annotated[kind | None, option]


def _flag_type(annotation: Any) -> tuple[Any, None]:
    """A field's type as one option's type: `X | None` is X; a Literal stays one (typer offers its choices)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [member for member in typing.get_args(annotation) if member is not type(None)]
        if len(members) == 1:
            return _flag_type(members[0])
    if typing.get_origin(annotation) is Literal:
        return annotation, None
    if annotation in (bool, int, float, str):
        return annotation, None
    raise TypeError(f"no command-line flag for a field of type {annotation!r}")


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
