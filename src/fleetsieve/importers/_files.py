"""Reading result files and appending them to a grid, all or nothing."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from fleetsieve.errors import InputError
from fleetsieve.grid import load_grid, write_grid
from fleetsieve.importers.aiperf import parse_aiperf
from fleetsieve.importers.guidellm import parse_guidellm
from fleetsieve.importers.vllm import parse_vllm
from fleetsieve.records import Cell, Measurement

Parser = Callable[..., list[Measurement]]

#: The one place import formats are registered: name -> parser(data, where, workload=, tp=).
FORMATS: dict[str, Parser] = {"vllm": parse_vllm, "guidellm": parse_guidellm, "aiperf": parse_aiperf}


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except json.JSONDecodeError as err:
        raise InputError(str(path), f"not valid JSON: {err}") from None


def parse_files(paths: Sequence[str | Path], fmt: str, *, workload: str, tp: int) -> list[Measurement]:
    """Measurements from every file; raises InputError (naming file and key) on the first problem."""
    if fmt not in FORMATS:
        raise InputError("--format", f"unknown format {fmt!r} (available: {', '.join(sorted(FORMATS))})")
    if tp < 1 or not workload.strip():
        raise InputError("--tp/--workload", "tp must be >= 1 and the workload name non-empty")
    if not paths:
        raise InputError("import", "no files given")
    out: list[Measurement] = []
    for path in map(Path, paths):
        out += FORMATS[fmt](_read_json(path), str(path), workload=workload, tp=tp)
    return out


def number_repeats(new: Iterable[Measurement], existing: Iterable[Measurement]) -> list[Measurement]:
    """Give each new run of a cell the next free repeat index after the runs already held."""
    taken: Counter[Cell] = Counter()
    for m in existing:
        taken[m.cell] = max(taken[m.cell], m.repeat + 1)
    numbered = []
    for m in new:
        numbered.append(dataclasses.replace(m, repeat=taken[m.cell]))
        taken[m.cell] += 1
    return numbered


def import_files(paths: Sequence[str | Path], fmt: str, *, workload: str, tp: int, out: str | Path) -> list[Measurement]:
    """Parse every file, then append all their rows to the grid at ``out`` (nothing on error)."""
    parsed = parse_files(paths, fmt, workload=workload, tp=tp)
    out = Path(out)
    existing = load_grid(out).measurements if out.exists() and out.stat().st_size > 0 else ()
    rows = number_repeats(parsed, existing)
    write_grid(rows, out, append=True)
    return rows
