"""Campaign stores behind one ``Store`` protocol (see ``base.py``): memory and SQLite.

``open_store(url)`` is the one place a storage URL is turned into a store.
"""

from __future__ import annotations

from fleetsieve.errors import InputError
from fleetsieve.store.base import SCHEMA_VERSION, CampaignSetup, Proposal, Store, space_from_dict, space_to_dict
from fleetsieve.store.memory import MemoryStore
from fleetsieve.store.sqlite import SQLiteStore


def open_store(url: str | None) -> Store:
    """``memory://`` or ``sqlite:///path.db``; anything else (or nothing) is an InputError."""
    if not url:
        raise InputError("--storage", "missing (give e.g. sqlite:///campaign.db, or memory:// for a run that is not kept)")
    if url == "memory://":
        return MemoryStore()
    if url.startswith("sqlite:///"):
        return SQLiteStore(url)
    raise InputError("--storage", f"unsupported storage URL {url!r} (use sqlite:///path.db or memory://)")


__all__ = ["CampaignSetup", "MemoryStore", "Proposal", "SCHEMA_VERSION", "SQLiteStore", "Store", "open_store",
           "space_from_dict", "space_to_dict"]
