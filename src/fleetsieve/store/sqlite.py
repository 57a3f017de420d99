"""A SQLite store (``sqlite:///path.db``): WAL mode, one atomic commit per proposal and per result.

Rows are private to this module (``_ProposalRow``, ``_ResultRow``); only records leave it. The
schema carries a version in the ``meta`` table from the first day; any other version, a
foreign database or a damaged file is refused with an ``InputError`` and never written to.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from fleetsieve.errors import InputError
from fleetsieve.records import Cell, Measurement
from fleetsieve.store.base import SCHEMA_VERSION, CampaignSetup, Proposal, Store

PREFIX = "sqlite:///"

_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE proposals (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, idx INTEGER NOT NULL,"
    " workload TEXT NOT NULL, tp INTEGER NOT NULL, load_rps REAL NOT NULL, repeat INTEGER NOT NULL,"
    " seed INTEGER NOT NULL, created_at REAL NOT NULL)",
    "CREATE TABLE results (seq INTEGER PRIMARY KEY AUTOINCREMENT, proposal_id TEXT NOT NULL UNIQUE"
    " REFERENCES proposals(id), status TEXT NOT NULL, gpu_seconds REAL NOT NULL, measurement TEXT NOT NULL,"
    " told_at REAL NOT NULL)",
)
_TABLES = {"meta", "proposals", "results"}


@dataclass(frozen=True)
class _ProposalRow:
    id: str
    idx: int
    workload: str
    tp: int
    load_rps: float
    repeat: int
    seed: int

    @classmethod
    def of(cls, p: Proposal) -> "_ProposalRow":
        return cls(p.id, p.index, p.cell.workload, p.cell.tp, p.cell.load_rps, p.repeat, p.seed)

    def record(self) -> Proposal:
        return Proposal(self.id, self.idx, Cell(self.workload, self.tp, self.load_rps), self.repeat, self.seed)


@dataclass(frozen=True)
class _ResultRow:
    proposal_id: str
    status: str
    gpu_seconds: float
    measurement: str

    @classmethod
    def of(cls, proposal_id: str, m: Measurement) -> "_ResultRow":
        return cls(proposal_id, m.status.value, m.gpu_seconds, json.dumps(m.to_dict(), allow_nan=True))

    def record(self) -> tuple[str, Measurement]:
        return self.proposal_id, Measurement.from_dict(json.loads(self.measurement))


def path_of(url: str) -> Path:
    """The file a ``sqlite:///`` URL names (``sqlite:////abs.db`` is absolute, ``sqlite:///rel.db`` relative)."""
    if not url.startswith(PREFIX) or not url[len(PREFIX):]:
        raise InputError("--storage", f"{url!r} is not a SQLite URL (expected sqlite:///path/to/campaign.db)")
    return Path(url[len(PREFIX):])


def _check_writable(url: str, path: Path) -> None:
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(url, f"directory {str(folder)!r} does not exist")
    target = path if path.exists() else folder
    if not os.access(target, os.W_OK):
        raise InputError(url, f"{str(target)!r} is not writable")


class SQLiteStore(Store):
    """A campaign in one SQLite file. See ``Store`` for the contract."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.path = path_of(url)
        _check_writable(url, self.path)
        self._lock = threading.Lock()
        self._conn = self._connect()

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0)
        except sqlite3.Error as err:
            raise InputError(self.url, f"cannot open or create the database file ({err}); is the place writable?") from None
        try:
            self._prepare(conn)
        except sqlite3.DatabaseError as err:
            conn.close()
            raise InputError(self.url, f"not a usable FleetSieve database ({err})") from None
        except InputError:
            conn.close()
            raise
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        # Read before anything writes, so a damaged or foreign file is refused untouched.
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        tables.discard("sqlite_sequence")
        if tables and not _TABLES <= tables:
            raise InputError(self.url, f"not a FleetSieve campaign database (it holds tables: {', '.join(sorted(tables))})")
        if tables:
            self._check_version(conn)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        if not tables:
            with conn:
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def _check_version(self, conn: sqlite3.Connection) -> None:
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None or row[0] != str(SCHEMA_VERSION):
            found = "none" if row is None else row[0]
            raise InputError(self.url, f"schema version {found} is not supported (this FleetSieve reads version {SCHEMA_VERSION})")

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        with self._lock:
            try:
                with self._conn:  # one transaction: committed on success, rolled back on error
                    self._conn.execute(sql, params)
            except sqlite3.IntegrityError as err:
                raise InputError(self.url, f"refused a duplicate or dangling row ({err})") from None
            except sqlite3.DatabaseError as err:
                raise InputError(self.url, f"database error ({err})") from None

    def _read(self, sql: str) -> Iterator[tuple[Any, ...]]:
        with self._lock:
            try:
                return iter(self._conn.execute(sql).fetchall())
            except sqlite3.DatabaseError as err:
                raise InputError(self.url, f"database error ({err})") from None

    def save_setup(self, setup: CampaignSetup) -> None:
        if self.load_setup() is not None:
            raise InputError(self.url, "a campaign is already stored here")
        self._write("INSERT INTO meta VALUES ('setup', ?)", (json.dumps(setup.to_dict()),))

    def load_setup(self) -> CampaignSetup | None:
        rows = list(self._read("SELECT value FROM meta WHERE key='setup'"))
        if not rows:
            return None
        try:
            return CampaignSetup.from_dict(json.loads(rows[0][0]))
        except (ValueError, KeyError, TypeError) as err:
            raise InputError(self.url, f"the stored campaign setup is damaged ({err})") from None

    def add_proposal(self, proposal: Proposal) -> None:
        row = _ProposalRow.of(proposal)
        self._write("INSERT INTO proposals (id, idx, workload, tp, load_rps, repeat, seed, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (row.id, row.idx, row.workload, row.tp, row.load_rps, row.repeat, row.seed, time.time()))

    def add_result(self, proposal_id: str, measurement: Measurement) -> None:
        if self.proposal(proposal_id) is None:
            raise InputError(self.url, f"unknown proposal {proposal_id!r}")
        if self.has_result(proposal_id):
            raise InputError(self.url, f"proposal {proposal_id!r} already has a measurement")
        row = _ResultRow.of(proposal_id, measurement)
        self._write("INSERT INTO results (proposal_id, status, gpu_seconds, measurement, told_at) VALUES (?, ?, ?, ?, ?)",
                    (row.proposal_id, row.status, row.gpu_seconds, row.measurement, time.time()))

    def proposals(self) -> list[Proposal]:
        rows = self._read("SELECT id, idx, workload, tp, load_rps, repeat, seed FROM proposals ORDER BY seq")
        return [_ProposalRow(*r).record() for r in rows]

    def results(self) -> list[tuple[str, Measurement]]:
        rows = self._read("SELECT proposal_id, status, gpu_seconds, measurement FROM results ORDER BY seq")
        try:
            return [_ResultRow(*r).record() for r in rows]
        except (ValueError, KeyError, TypeError) as err:
            raise InputError(self.url, f"a stored measurement is damaged ({err})") from None

    def close(self) -> None:
        with self._lock:
            self._conn.close()
