"""Loaders that turn a user's trace CSV into a :class:`~fleetsieve.sim.workloads.Workload`.

Two schemas are understood:

- length traces: ``ContextTokens, GeneratedTokens[, TIMESTAMP]`` (the Azure LLM inference
  trace) or ``num_prefill_tokens, num_decode_tokens`` (Vidur/Etalon processed traces);
- BurstGPT: ``Timestamp, Model, Request tokens, Response tokens, Total tokens, Log Type``.

Files may be plain or gzip-compressed (``.gz``); lines starting with ``#`` are comments.
Header names match case-insensitively. Any problem raises :class:`InputError` naming the
file, the line (1-based, as an editor shows it) and the column.
"""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fleetsieve.errors import InputError
from fleetsieve.sim.workloads import Workload

#: (prompt column, output column) pairs a length trace may use, in order of preference.
LENGTH_SCHEMAS = (("ContextTokens", "GeneratedTokens"), ("num_prefill_tokens", "num_decode_tokens"))
BURSTGPT_COLUMNS = ("Timestamp", "Model", "Request tokens", "Response tokens")


@dataclass(frozen=True)
class _Table:
    """The data rows of a CSV file, with each row's line number for error messages."""

    path: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    lines: tuple[int, ...]

    def has(self, column: str) -> bool:
        return column.lower() in self.header

    def index(self, column: str) -> int:
        if not self.has(column):
            raise InputError(self.path, f"missing column {column!r} (header has: {', '.join(self.header)})")
        return self.header.index(column.lower())

    def strings(self, column: str) -> list[str]:
        col = self.index(column)
        return [row[col].strip() for row in self.rows]

    def numbers(self, column: str) -> np.ndarray:
        """One column as floats; the first non-numeric cell is reported by line."""
        cells = self.strings(column)
        try:
            values = np.array(cells, dtype=np.float64)
        except ValueError:
            values = None
        if values is None or not np.all(np.isfinite(values)):
            self._raise_first_bad(column, cells)
        return values

    def _raise_first_bad(self, column: str, cells: list[str]) -> None:
        for line, cell in zip(self.lines, cells):
            try:
                if np.isfinite(float(cell)):
                    continue
            except ValueError:
                pass
            raise InputError(f"{self.path}:{line}", f"column {column!r}: {cell!r} is not a finite number")

    def counts(self, column: str, minimum: int) -> np.ndarray:
        """One column of token counts: whole numbers >= ``minimum``."""
        values = self.numbers(column)
        bad = np.flatnonzero((values != np.round(values)) | (values < minimum))
        if len(bad):
            line, cell = self.lines[bad[0]], self.rows[bad[0]][self.index(column)].strip()
            raise InputError(f"{self.path}:{line}", f"column {column!r}: {cell!r} is not a whole number >= {minimum}")
        return values.astype(np.int64)

    def keep(self, mask: np.ndarray) -> "_Table":
        picked = np.flatnonzero(mask)
        return _Table(self.path, self.header, tuple(self.rows[i] for i in picked), tuple(self.lines[i] for i in picked))


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _read_table(path: str | Path) -> _Table:
    """Read a CSV into a :class:`_Table`; empty files and ragged rows are input errors."""
    path = Path(path)
    where = str(path)
    if not path.is_file():
        raise InputError(where, "no such file")
    try:
        with _open_text(path) as handle:
            numbered = [(line, row) for line, row in _numbered_rows(handle) if row and not row[0].startswith("#")]
    except (OSError, UnicodeDecodeError, csv.Error, EOFError) as err:
        raise InputError(where, f"cannot read as CSV text: {err}") from err
    if not numbered:
        raise InputError(where, "empty file (no header row)")
    (_, header), data = numbered[0], numbered[1:]
    if not data:
        raise InputError(where, "has a header but no data rows")
    for line, row in data:
        if len(row) != len(header):
            raise InputError(f"{where}:{line}", f"has {len(row)} fields, the header has {len(header)}")
    names = tuple(name.strip().lower() for name in header)
    return _Table(where, names, tuple(tuple(row) for _, row in data), tuple(line for line, _ in data))


def _numbered_rows(handle: io.TextIOBase) -> list[tuple[int, list[str]]]:
    reader = csv.reader(handle)
    rows = []
    for row in reader:
        rows.append((reader.line_num, row))
    return rows


def _timestamps_s(table: _Table, column: str) -> np.ndarray:
    """Seconds, from numbers (already seconds) or from date-times such as Azure's ``2023-11-16 18:15:46.68``."""
    cells = table.strings(column)
    try:
        np.array(cells, dtype=np.float64)
        numeric = True
    except ValueError:
        numeric = False
    if numeric:  # seconds; numbers() reports a NaN or inf by line
        return table.numbers(column)
    try:
        stamps = np.array([_iso(cell) for cell in cells], dtype="datetime64[ns]")
    except ValueError:
        stamps = None
    if stamps is None or np.isnat(stamps).any():
        _raise_first_bad_datetime(table, column, cells)
    return (stamps - stamps.min()).astype(np.int64) / 1e9


def _iso(cell: str) -> str:
    return cell.replace(" ", "T", 1)


def _raise_first_bad_datetime(table: _Table, column: str, cells: list[str]) -> None:
    for line, cell in zip(table.lines, cells):
        try:
            if not np.isnat(np.datetime64(_iso(cell), "ns")):
                continue
        except ValueError:
            pass
        raise InputError(f"{table.path}:{line}", f"column {column!r}: {cell!r} is neither seconds nor a date-time")


def _workload_from_columns(
    name: str, source: str, prompt: np.ndarray, output: np.ndarray, stamps: np.ndarray | None
) -> Workload:
    """A Workload with rows in time order (stable, so equal timestamps keep file order)."""
    if stamps is not None:
        order = np.argsort(stamps, kind="stable")
        prompt, output, stamps = prompt[order], output[order], stamps[order]
    return Workload(name, prompt, output, stamps, source=source)


def load_length_trace(path: str | Path) -> Workload:
    """A workload from a CSV of (prompt, output) token counts, with timestamps when present.

    Columns: ``ContextTokens, GeneratedTokens`` (optionally ``TIMESTAMP``: seconds, or date-times
    like ``2023-11-16 18:15:46.6805900``) or ``num_prefill_tokens, num_decode_tokens``.
    Token counts must be whole numbers >= 1. Rows are put in timestamp order.
    """
    table = _read_table(path)
    schema = next((pair for pair in LENGTH_SCHEMAS if table.has(pair[0]) and table.has(pair[1])), None)
    if schema is None:
        wanted = " or ".join(f"({a}, {b})" for a, b in LENGTH_SCHEMAS)
        raise InputError(table.path, f"missing columns: need {wanted}; header has: {', '.join(table.header)}")
    prompt = table.counts(schema[0], minimum=1)
    output = table.counts(schema[1], minimum=1)
    stamps = _timestamps_s(table, "TIMESTAMP") if table.has("TIMESTAMP") else None
    return _workload_from_columns(Path(path).name.split(".")[0], table.path, prompt, output, stamps)


def load_burstgpt(path: str | Path, model: str | None = None) -> Workload:
    """A workload from a BurstGPT CSV (``Timestamp`` in seconds, ``Request tokens``, ``Response tokens``).

    Failed requests (0 response tokens) and rows with 0 request tokens are dropped, as no
    engine can serve them. ``model`` keeps only that model's rows (e.g. ``"ChatGPT"``).
    """
    table = _read_table(path)
    for column in BURSTGPT_COLUMNS:
        table.index(column)
    if model is not None:
        models = table.strings("Model")
        table = _only_model(table, models, model)
    prompt = table.counts("Request tokens", minimum=0)
    output = table.counts("Response tokens", minimum=0)
    served = (prompt > 0) & (output > 0)
    if not served.any():
        raise InputError(table.path, "no usable rows: every row has 0 request or 0 response tokens")
    table = table.keep(served)
    stamps = table.numbers("Timestamp")
    name = "burstgpt" if model is None else f"burstgpt:{model}"
    return _workload_from_columns(name, table.path, prompt[served], output[served], stamps)


def _only_model(table: _Table, models: list[str], model: str) -> _Table:
    mask = np.array([m == model for m in models])
    if not mask.any():
        raise InputError(table.path, f"no rows for model {model!r}; models in file: {', '.join(sorted(set(models)))}")
    return table.keep(mask)
