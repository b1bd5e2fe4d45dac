"""`save_reproducer`: a recipe written as a text-IR model (loadable by `scons model=`) plus its recipe."""
from __future__ import annotations

from pathlib import Path

from ...text import parse
from .recipe import Recipe


def save_reproducer(recipe: Recipe, directory, name: str, note: str = "") -> Path:
    """Write `<name>.txt` (the model, loadable by `scons model=`) and `<name>.json` (its recipe); the .txt path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    text = recipe.to_text()
    header = "".join(f"// {line}\n" for line in note.splitlines()) if note else ""
    path = directory / f"{name}.txt"
    path.write_text(header + text if _comments_parse(header + text) else text)
    (directory / f"{name}.json").write_text(recipe.to_json())
    if note:
        (directory / f"{name}.note").write_text(note + "\n")
    return path


def _comments_parse(text: str) -> bool:
    try:
        parse(text)
        return True
    except Exception:  # noqa: BLE001 - any parse problem: write the model without the comment header
        return False
