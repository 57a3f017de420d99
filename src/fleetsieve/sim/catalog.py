"""Model and hardware catalogs: built-in TOML files, extensible by a user TOML file.

A user catalog may hold ``[models."org/name"]`` and ``[hardware.name]`` tables (same keys as
``catalog/models.toml`` and ``catalog/hardware.toml``); its entries override built-in ones.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fleetsieve.errors import InputError

_CATALOG_DIR = Path(__file__).with_name("catalog")
PRECISIONS = {"bf16": 2, "fp8": 1}  # bytes per weight and per KV element


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    aliases: list[str] = Field(default_factory=list)


class ModelArch(_Entry):
    """A dense decoder-only architecture (numbers from the model's config.json)."""

    layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    q_heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    intermediate: int = Field(gt=0)
    vocab: int = Field(gt=0)
    gated_mlp: bool = True
    tied_embeddings: bool = False

    @property
    def layer_params(self) -> int:
        """Weights of one transformer layer's GEMMs (qkv, o, MLP)."""
        qkv = self.hidden * (self.q_heads + 2 * self.kv_heads) * self.head_dim
        out = self.q_heads * self.head_dim * self.hidden
        mlp = (3 if self.gated_mlp else 2) * self.hidden * self.intermediate
        return qkv + out + mlp

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def total_params(self) -> int:
        return self.layers * self.layer_params + self.embedding_params

    def kv_bytes_per_token(self, precision: str) -> int:
        """KV-cache bytes one token occupies over all layers (whole model, before TP split)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * PRECISIONS[precision]


class Hardware(_Entry):
    """One accelerator type."""

    bf16_flops: float = Field(gt=0)
    fp8_flops: float = Field(gt=0)
    hbm_bytes_per_s: float = Field(gt=0)
    memory_bytes: float = Field(gt=0)
    nvlink_bytes_per_s: float = Field(gt=0)
    all_reduce_scale: float = Field(default=1.0, gt=0)

    def flops(self, precision: str) -> float:
        return self.fp8_flops if precision == "fp8" else self.bf16_flops


@dataclass(frozen=True)
class Catalog:
    """Models and hardware by canonical name, with aliases resolved."""

    models: Mapping[str, ModelArch]
    hardware: Mapping[str, Hardware]

    def model(self, name: str) -> ModelArch:
        return _lookup(self.models, name, "model")

    def gpu(self, name: str) -> Hardware:
        return _lookup(self.hardware, name, "gpu")


def _lookup(table: Mapping[str, Any], name: str, kind: str) -> Any:
    for key, entry in table.items():
        if name == key or name in entry.aliases or name.lower() == key.lower():
            return entry
    raise InputError(f"--{kind}", f"unknown {kind} {name!r}; known: {', '.join(sorted(table))}")


def _parse(table: Mapping[str, Any], cls: type[_Entry], source: str) -> dict[str, Any]:
    parsed = {}
    for name, body in table.items():
        try:
            parsed[name] = cls.model_validate(body)
        except ValidationError as err:
            first = err.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise InputError(source, f"{name}: {loc}: {first['msg']}") from None
    return parsed


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except tomllib.TOMLDecodeError as err:
        raise InputError(str(path), f"invalid TOML: {err}") from None


@lru_cache(maxsize=8)
def load_catalog(user_file: str | None = None) -> Catalog:
    """The built-in catalog, extended (and overridden) by ``user_file`` when given."""
    models = _parse(_read_toml(_CATALOG_DIR / "models.toml"), ModelArch, "models.toml")
    hardware = _parse(_read_toml(_CATALOG_DIR / "hardware.toml"), Hardware, "hardware.toml")
    if user_file:
        extra = _read_toml(Path(user_file))
        unknown = set(extra) - {"models", "hardware"}
        if unknown:
            raise InputError(user_file, f"unknown table(s) {sorted(unknown)}; use [models.X] and [hardware.X]")
        models.update(_parse(extra.get("models", {}), ModelArch, user_file))
        hardware.update(_parse(extra.get("hardware", {}), Hardware, user_file))
    return Catalog(models, hardware)


def check_precision(precision: str, where: str = "--precision") -> str:
    if precision not in PRECISIONS:
        raise InputError(where, f"unknown precision {precision!r}; use one of {sorted(PRECISIONS)}")
    return precision
