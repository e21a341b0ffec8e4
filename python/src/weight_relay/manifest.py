"""Manifests, dtypes, fragments and the compatibility-mode safetensors layout, as the Java side
(reshard's Fragmenter and SafetensorsLayout) defines them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import UnknownNameError, UsageError

#: dtype name (the contracts' ``Dtype``) -> (element bytes, safetensors name, numpy dtype string)
DTYPES: dict[str, tuple[int, str, str]] = {
    "fp32": (4, "F32", "<f4"),
    "bf16": (2, "BF16", "<u2"),  # numpy has no bfloat16: its bits as uint16
    "fp16": (2, "F16", "<f2"),
    "fp8_e4m3": (1, "F8_E4M3", "u1"),  # the bits as uint8
    "int8": (1, "I8", "i1"),
    "int32": (4, "I32", "<i4"),
    "int64": (8, "I64", "<i8"),
}

#: torch dtype attribute name -> contract dtype name
TORCH_DTYPES = {
    "float32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "float8_e4m3fn": "fp8_e4m3",
    "int8": "int8",
    "int32": "int32",
    "int64": "int64",
}

#: numpy dtype string -> contract dtype name (bf16 and fp8 cannot be told apart from bits)
NUMPY_DTYPES = {"<f4": "fp32", "<f2": "fp16", "|i1": "int8", "<i4": "int32", "<i8": "int64"}

DEFAULT_MAX_FRAGMENT_BYTES = 64 << 20


def element_bytes(dtype: str) -> int:
    try:
        return DTYPES[dtype][0]
    except KeyError:
        raise UsageError(f"unknown dtype {dtype!r}; one of {sorted(DTYPES)}") from None


def dtype_of(tensor: Any) -> str:
    """The contract dtype of a torch tensor or numpy array (numpy uint16 is not guessed)."""
    mod = type(tensor).__module__
    if mod.startswith("torch"):
        name = str(tensor.dtype).replace("torch.", "")
        if name in TORCH_DTYPES:
            return TORCH_DTYPES[name]
        raise UsageError(f"torch dtype {tensor.dtype} is not one weight-relay converts")
    s = tensor.dtype.str
    if s in NUMPY_DTYPES:
        return NUMPY_DTYPES[s]
    raise UsageError(
        f"numpy dtype {tensor.dtype} is ambiguous or unsupported; give the dtype explicitly "
        "(bf16 as uint16 bits, fp8_e4m3 as uint8 bits)")


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    trainer_dtype: str
    rollout_dtype: str

    def __post_init__(self) -> None:
        element_bytes(self.trainer_dtype)
        element_bytes(self.rollout_dtype)
        if any(d < 0 for d in self.shape):
            raise UsageError(f"tensor {self.name}: negative dimension in {self.shape}")

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def trainer_bytes(self) -> int:
        return self.numel * element_bytes(self.trainer_dtype)

    @property
    def rollout_bytes(self) -> int:
        return self.numel * element_bytes(self.rollout_dtype)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "trainerDtype": self.trainer_dtype,
                "rolloutDtype": self.rollout_dtype}


@dataclass(frozen=True)
class Fragment:
    """One stored object: a dim-0 slice ``[row, row + rows)`` of a tensor."""

    fragment: str
    tensor: str
    row: int
    rows: int
    rollout_bytes: int


@dataclass
class Manifest:
    model: str
    tensors: list[TensorSpec]
    max_fragment_bytes: int = DEFAULT_MAX_FRAGMENT_BYTES
    _index: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.tensors:
            raise UsageError("a manifest needs at least one tensor")
        for i, t in enumerate(self.tensors):
            if t.name in self._index:
                raise UsageError(f"tensor {t.name} appears twice in the manifest")
            self._index[t.name] = i

    def index(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise UnknownNameError(f"no tensor {name} in the manifest of {self.model}") from None

    def spec(self, name: str) -> TensorSpec:
        return self.tensors[self.index(name)]

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "tensors": [t.to_json() for t in self.tensors],
                "maxFragmentBytes": self.max_fragment_bytes}

    @staticmethod
    def from_json(j: Mapping[str, Any]) -> Manifest:
        try:
            return Manifest(
                str(j["model"]),
                [TensorSpec(str(t["name"]), tuple(int(d) for d in t["shape"]),
                            str(t["trainerDtype"]), str(t["rolloutDtype"]))
                 for t in j["tensors"]],
                int(j.get("maxFragmentBytes") or DEFAULT_MAX_FRAGMENT_BYTES))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            if isinstance(e, UsageError):
                raise
            raise UsageError(f"not a manifest ({type(e).__name__} {e}): {j!r:.300}") from e

    @staticmethod
    def of_state_dict(model: str, state_dict: Mapping[str, Any],
                      rollout_dtypes: Mapping[str, str] | str | None = None,
                      trainer_dtypes: Mapping[str, str] | None = None,
                      max_fragment_bytes: int = DEFAULT_MAX_FRAGMENT_BYTES) -> Manifest:
        """A manifest in the state dict's order. ``rollout_dtypes``: one dtype for all, a dict per
        tensor, or None (keep each tensor's dtype). ``trainer_dtypes`` names dtypes numpy cannot
        express (bf16 bits as uint16)."""
        specs = []
        for name, t in state_dict.items():
            td = (trainer_dtypes or {}).get(name) or dtype_of(t)
            if isinstance(rollout_dtypes, str):
                rd = rollout_dtypes
            else:
                rd = (rollout_dtypes or {}).get(name, td)
            specs.append(TensorSpec(name, tuple(int(d) for d in t.shape), td, rd))
        return Manifest(model, specs, max_fragment_bytes)

    def fragments_of(self, t: TensorSpec) -> list[Fragment]:
        """Fragmenter's cut: dim-0 slices of at most ``max_fragment_bytes`` (rollout dtype), in
        equal-sized pieces; ids ``{tensor}@{i}``."""
        if len(t.shape) == 0 or t.shape[0] == 0:
            return [Fragment(t.name + "@0", t.name, 0, t.shape[0] if t.shape else 1,
                             t.rollout_bytes)]
        row_bytes = (t.numel // t.shape[0]) * element_bytes(t.rollout_dtype)
        per = t.shape[0] if row_bytes == 0 else max(1, self.max_fragment_bytes // row_bytes)
        pieces = (t.shape[0] + per - 1) // per
        base, extra = divmod(t.shape[0], pieces)
        out, row = [], 0
        for i in range(pieces):
            rows = base + (1 if i < extra else 0)
            out.append(Fragment(f"{t.name}@{i}", t.name, row, rows, rows * row_bytes))
            row += rows
        return out


_ST_ESCAPES = {'"': '\\"', "\\": "\\\\"}


def _json_string(s: str) -> str:
    out = ['"']
    for c in s:
        if c in _ST_ESCAPES:
            out.append(_ST_ESCAPES[c])
        elif ord(c) < 0x20:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


@dataclass(frozen=True)
class SafetensorsLayout:
    """The image a compat worker receives: 8-byte LE header length, JSON header padded with spaces
    to a multiple of 8, then every tensor in manifest order in its rollout dtype."""

    header: bytes
    data_start: int
    offsets: tuple[int, ...]
    image_bytes: int

    @staticmethod
    def of(manifest: Manifest) -> SafetensorsLayout:
        parts = ['{"__metadata__":{"format":"pt"}']
        rel, cursor = [], 0
        for t in manifest.tensors:
            rel.append(cursor)
            end = cursor + t.rollout_bytes
            shape = "[" + ",".join(str(d) for d in t.shape) + "]"
            parts.append(f',{_json_string(t.name)}:{{"dtype":"{DTYPES[t.rollout_dtype][1]}",'
                         f'"shape":{shape},"data_offsets":[{cursor},{end}]}}')
            cursor = end
        parts.append("}")
        header = "".join(parts).encode("utf-8")
        header += b" " * ((-len(header)) % 8)
        start = 8 + len(header)
        return SafetensorsLayout(header, start, tuple(start + r for r in rel), start + cursor)


def parse_safetensors_header(buf: Any) -> tuple[dict[str, Any], int]:
    """The header dict and the data start of a safetensors image in ``buf`` (bytes-like)."""
    mv = memoryview(buf)
    n = int.from_bytes(mv[:8], "little")
    if n <= 0 or 8 + n > len(mv):
        raise UsageError(f"not a safetensors image: header length {n}, image {len(mv)} bytes")
    try:
        header = json.loads(bytes(mv[8:8 + n]).decode("utf-8"))
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
        raise UsageError(f"not a safetensors image: its header is not JSON: {e}") from e
    if not isinstance(header, dict):
        raise UsageError(f"not a safetensors image: its header is not an object: {header!r:.100}")
    return header, 8 + n


def shape_tuple(shape: Sequence[int] | Iterable[int]) -> tuple[int, ...]:
    return tuple(int(d) for d in shape)
