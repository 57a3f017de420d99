"""SQLiteStore: durability, WAL, schema version, and refusing damaged or foreign files untouched."""

from __future__ import annotations

import os
import sqlite3

import pytest

from campaign_support import replay_setup
from fleetsieve.errors import InputError
from fleetsieve.records import Cell, Measurement
from fleetsieve.store import Proposal, SQLiteStore, open_store

CELL = Cell("chat", 1, 0.5)


def _fill(url: str) -> None:
    with open_store(url) as store:
        store.save_setup(replay_setup())
        store.add_proposal(Proposal("p00000", 0, CELL, 0, 0))
        store.add_result("p00000", Measurement(CELL, metrics={"request_throughput": 0.5}, gpu_seconds=300.0))
        store.add_proposal(Proposal("p00001", 1, CELL, 1, 0))


def test_everything_survives_reopening(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    _fill(url)
    with open_store(url) as store:
        assert store.load_setup() == replay_setup()
        assert [p.id for p in store.pending()] == ["p00001"] and store.gpu_seconds() == 300.0


def test_each_write_is_visible_to_another_connection_at_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    writer, reader = SQLiteStore(url), None
    writer.add_proposal(Proposal("p00000", 0, CELL, 0, 0))
    reader = SQLiteStore(url)  # a second process would see the same: the write was committed
    assert [p.id for p in reader.proposals()] == ["p00000"]
    writer.close(), reader.close()


def test_wal_mode_and_schema_version(tmp_path):
    path = tmp_path / "c.db"
    SQLiteStore(f"sqlite:///{path}").close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "1"
    conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    conn.commit(), conn.close()
    with pytest.raises(InputError, match="schema version 99 is not supported"):
        SQLiteStore(f"sqlite:///{path}")


def test_corrupt_file_is_refused_untouched(tmp_path):
    path = tmp_path / "c.db"
    path.write_bytes(b"this is not a database" * 100)
    before = path.read_bytes()
    with pytest.raises(InputError, match="not a usable FleetSieve database"):
        SQLiteStore(f"sqlite:///{path}")
    assert path.read_bytes() == before


def test_damaged_pages_are_refused_and_data_kept(tmp_path):
    path = tmp_path / "c.db"
    _fill(f"sqlite:///{path}")
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # wipe most of the first page (the schema)
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="c.db"):
        with SQLiteStore(f"sqlite:///{path}") as store:
            store.results()
    assert path.read_bytes() == bytes(data)


def test_foreign_database_is_refused(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit(), conn.close()
    with pytest.raises(InputError, match="not a FleetSieve campaign database .*users"):
        SQLiteStore(f"sqlite:///{path}")


def test_missing_directory(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        SQLiteStore(f"sqlite:///{tmp_path / 'nope' / 'c.db'}")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere, so an unwritable folder cannot be made")
def test_unwritable_directory(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    with pytest.raises(InputError, match="not writable"):
        SQLiteStore(f"sqlite:///{folder / 'c.db'}")


def test_relative_and_absolute_urls(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    SQLiteStore("sqlite:///rel.db").close()
    assert (tmp_path / "rel.db").exists()
    SQLiteStore(f"sqlite:///{tmp_path / 'abs.db'}").close()
    assert (tmp_path / "abs.db").exists()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc as a place nobody can create files in")
def test_unwritable_place_even_for_root():
    with pytest.raises(InputError, match="cannot open or create the database file"):
        SQLiteStore("sqlite:////proc/c.db")


def test_a_folder_is_not_a_database(tmp_path):
    with pytest.raises(InputError, match="cannot open or create"):
        SQLiteStore(f"sqlite:///{tmp_path}")
