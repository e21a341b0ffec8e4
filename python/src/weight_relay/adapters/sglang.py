"""SGLang (0.5.23): parameter-direct updates through SGLang's own weight-update session, and the
compat image as a model directory for ``update_weights_from_disk``.

How an update runs (:meth:`SGLangRelay.update`, driven from the process that holds the
``sglang.Engine``, on the instance's node):

1. The transfer, while SGLang serves. Registered ``direct_install="staged"``: ``loader.fetch(G)``
   receives every TP rank's shards into the loader's own copy of that rank's buffer and stops at
   ``FETCHED``, the whole group verified; a failure ends here (``UpdateFailedError``,
   ``RESUMED_OLD``) with SGLang untouched and the instance free to update again. Registered
   ``inPlace`` (the default, no memory beyond the buffers): ``loader.update(G)`` writes the shards
   straight into the rank's receive buffer; SGLang, which serves from its own parameters, is not
   touched either, but the loader counts that buffer as served weights, so a failure there ends
   ``PAUSED_REBUILD`` and the instance registers again before its next update.
2. ``engine.begin_weight_update()``: SGLang opens its weight-update session (it refuses
   ``update_weights_from_tensor`` outside one, and a second session while one is open). Staged,
   a refused session declines the fetched update (``loader.decline``: it ends ``RESUMED_OLD`` at
   once instead of holding the group until its deadline) and raises ``WeightLoadError``; SGLang
   serves on with its old weights, and :meth:`SGLangRelay.register` runs again before that
   generation is loaded (the group's session ended ``PAUSED_REBUILD``). Staged,
   ``loader.install`` now copies the fetched bytes into the buffers :func:`load_direct` reads (a
   failure closes the session and raises, SGLang's weights untouched).
3. ``engine.update_weights_from_tensor([(ticket, empty tensor)], load_format=LOAD_FORMAT)``: the
   Engine sends the same list to every TP rank, so the list carries no weights, only a *ticket*
   (in the name): loader URL, one worker id per TP rank, the layout. SGLang calls
   :func:`load_direct` (``--custom-weight-loader weight_relay.adapters.sglang.load_direct``) on
   every rank; each rank maps **its own** worker's receive buffer (``get_parallel().tp_rank``),
   checks every parameter's name, shape and dtype, agrees with the other ranks over SGLang's TP
   CPU group, and only if every rank is ready copies its shards into the parameters. It never
   raises (an exception there ends SGLang's scheduler, i.e. the server): it writes its outcome
   to a file per rank, which the driver reads.
4. ``engine.end_weight_update()``, always, so SGLang accepts the next session. A failed load
   raises :class:`~weight_relay.errors.WeightLoadError` naming each failing rank; no rank copied
   anything, the old weights stay in place.

Names: SGLang's Qwen2 and Llama fuse ``q_proj/k_proj/v_proj`` into ``qkv_proj`` and
``gate_proj/up_proj`` into ``gate_up_proj``, pad the vocabulary to a multiple of 64 and shard it
by rows. :class:`FusedLayout` (the mapping this adapter owns, per family in ``FAMILIES``) places
each checkpoint tensor's box of a TP rank inside that rank's buffer exactly where it sits in
SGLang's fused parameter shard, so one contiguous region of the buffer is one parameter.

Where bytes are copied (no zero-copy claim past the receive buffer): the loader-service writes
the published bytes into the receive buffer (the transfer itself); :func:`load_direct` copies each
parameter's region once, buffer -> parameter (``param.data.copy_``; on a GPU this is the
host-to-device copy). SGLang's serializer and ``tensor.to(device)`` see only the ticket's empty
tensor, never weight bytes. (Handing SGLang the weights as tensors instead costs a copy into
torch's shared memory per TP rank by ``MultiprocessingSerializer`` for CPU tensors, then
``.to(device)``, then the loader's copy.)

Compat: :func:`disk_directory` gives ``update_weights_from_disk`` a directory whose one
``model.safetensors`` is the shared image (SGLang's ``DefaultModelLoader`` reads it and copies
into the parameters)."""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import UsageError, WeightLoadError
from ..loader import LoaderClient, view
from ..manifest import Manifest, element_bytes
from . import image_directory

_log = logging.getLogger(__name__)

try:  # SGLang's own runtime context when it imports here (the TP rank and group of a rank)
    from sglang.srt.runtime_context import get_parallel as _get_parallel

    STANDIN = False
except ImportError as _missing:  # only a missing SGLang: a broken install raises, never hides
    _get_parallel = None
    STANDIN = True
    _log.warning("SGLang does not import here (%s): weight_relay.adapters.sglang runs without "
                 "SGLang's runtime context (STANDIN = True; TP 1 only)", _missing)

LOAD_FORMAT = __name__ + ".load_direct"
TICKET = "weight_relay.ticket:"
VOCAB_PADDING = 64  # SGLang's DEFAULT_VOCAB_PADDING_SIZE

# The mapping the adapter owns, per model family: SGLang's fused parameter -> the checkpoint
# tensors stacked in it, in order; and whether q/k/v carry a bias.
FUSED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}
FAMILIES = {"qwen2": {"qkv_bias": True}, "llama": {"qkv_bias": False}}


@dataclass(frozen=True)
class ModelDims:
    """What the layout needs of a Hugging Face config (``ModelDims.of(config)``)."""

    family: str
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    num_hidden_layers: int
    tie_word_embeddings: bool = False

    @classmethod
    def of(cls, config: Any, family: str | None = None) -> ModelDims:
        def get(key: str, default: Any = None) -> Any:
            if isinstance(config, Mapping):
                return config.get(key, default)
            return getattr(config, key, default)

        fam = family or str(get("model_type", ""))
        if fam not in FAMILIES:
            raise UsageError(f"model family {fam!r}: the SGLang layout knows {sorted(FAMILIES)}")
        heads = int(get("num_attention_heads"))
        hidden = int(get("hidden_size"))
        return cls(fam, hidden, int(get("intermediate_size")), heads,
                   int(get("num_key_value_heads") or heads),
                   int(get("head_dim") or hidden // heads), int(get("vocab_size")),
                   int(get("num_hidden_layers")), bool(get("tie_word_embeddings", False)))


@dataclass(frozen=True)
class Part:
    """A box of checkpoint tensor ``tensor`` (``offset``/``shape``) that lands at rows
    ``row``.. and columns ``col``.. of an SGLang parameter shard."""

    tensor: str
    offset: tuple[int, ...]
    shape: tuple[int, ...]
    row: int = 0


@dataclass(frozen=True)
class ParamSlot:
    """One SGLang parameter shard in a rank's buffer: ``shape`` (the shard's), ``dtype``, byte
    ``offset`` (contiguous, row-major), and the checkpoint boxes that fill it."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    offset: int
    parts: tuple[Part, ...]


def _split(n: int, tp: int, rank: int) -> tuple[int, int]:
    if n % tp:
        raise UsageError(f"dimension {n} is not divisible by TP {tp}")
    return n // tp * rank, n // tp


class FusedLayout:
    """SGLang's parameter shards of one TP rank for a Qwen2- or Llama-shaped model, laid out in
    one buffer: ``slots`` (in order), ``nbytes``, :meth:`fragments` for the loader."""

    def __init__(self, dims: ModelDims, dtypes: Mapping[str, str], tp: int, rank: int,
                 buffer_id: str = "params", align: int = 64) -> None:
        if not 0 <= rank < tp:
            raise UsageError(f"rank {rank} of TP {tp}")
        self.dims, self.tp, self.rank, self.buffer_id = dims, tp, rank, buffer_id
        slots: list[ParamSlot] = []
        cursor = 0
        for name, shape, parts in self._params():
            kinds = {dtypes[p.tensor] for p in parts if p.tensor in dtypes}
            missing = [p.tensor for p in parts if p.tensor not in dtypes]
            if missing:
                raise UsageError(f"SGLang parameter {name} needs {missing}, not published")
            if len(kinds) != 1:
                raise UsageError(f"SGLang parameter {name} fuses tensors of dtypes {kinds}")
            dtype = kinds.pop()
            cursor = (cursor + align - 1) // align * align
            slots.append(ParamSlot(name, shape, dtype, cursor, tuple(parts)))
            n = element_bytes(dtype)
            for d in shape:
                n *= d
            cursor += n
        self.slots = slots
        self.nbytes = max(cursor, 1)

    def _params(self) -> list[tuple[str, tuple[int, ...], list[Part]]]:
        d, tp, r = self.dims, self.tp, self.rank
        h, hd = d.hidden_size, d.head_dim
        out: list[tuple[str, tuple[int, ...], list[Part]]] = []
        # Vocabulary: padded to a multiple of 64, rows split evenly, padding rows left zero.
        padded = (d.vocab_size + VOCAB_PADDING - 1) // VOCAB_PADDING * VOCAB_PADDING
        v0, vn = _split(padded, tp, r)
        rows = max(0, min(v0 + vn, d.vocab_size) - v0)

        def vocab(name: str) -> tuple[str, tuple[int, ...], list[Part]]:
            return name, (vn, h), [Part(name, (v0, 0), (rows, h))] if rows else []

        out.append(vocab("model.embed_tokens.weight"))
        q0, qn = _split(d.num_attention_heads * hd, tp, r)
        if tp >= d.num_key_value_heads:  # kv heads replicated over tp / kv ranks
            if tp % d.num_key_value_heads:
                raise UsageError(f"TP {tp} is not a multiple of {d.num_key_value_heads} kv heads")
            k0, kn = r // (tp // d.num_key_value_heads) * hd, hd
        else:
            k0, kn = _split(d.num_key_value_heads * hd, tp, r)
        g0, gn = _split(d.intermediate_size, tp, r)
        for i in range(d.num_hidden_layers):
            a, m = f"model.layers.{i}.self_attn.", f"model.layers.{i}.mlp."
            for suffix, extra in ((".weight", (h,)), (".bias", ())):
                if suffix == ".bias" and not FAMILIES[d.family]["qkv_bias"]:
                    continue
                q, k, v = (a + p + suffix for p in FUSED["qkv_proj"])
                z = (0,) * len(extra)
                out.append((a + "qkv_proj" + suffix, (qn + 2 * kn, *extra),
                            [Part(q, (q0, *z), (qn, *extra)), Part(k, (k0, *z), (kn, *extra), qn),
                             Part(v, (k0, *z), (kn, *extra), qn + kn)]))
            o0, on = _split(d.num_attention_heads * hd, tp, r)
            out.append((a + "o_proj.weight", (h, on), [Part(a + "o_proj.weight", (0, o0),
                                                            (h, on))]))
            gate, up = (m + p + ".weight" for p in FUSED["gate_up_proj"])
            out.append((m + "gate_up_proj.weight", (2 * gn, h),
                        [Part(gate, (g0, 0), (gn, h)), Part(up, (g0, 0), (gn, h), gn)]))
            out.append((m + "down_proj.weight", (h, gn), [Part(m + "down_proj.weight", (0, g0),
                                                               (h, gn))]))
            for norm in ("input_layernorm", "post_attention_layernorm"):
                n = f"model.layers.{i}.{norm}.weight"
                out.append((n, (h,), [Part(n, (0,), (h,))]))
        out.append(("model.norm.weight", (h,), [Part("model.norm.weight", (0,), (h,))]))
        if not d.tie_word_embeddings:
            out.append(vocab("lm_head.weight"))
        return out

    def fragments(self) -> list[dict[str, Any]]:
        """The loader-service fragments (JSON) of this rank: every box at its place in the
        fused parameter, row-major strides of the parameter shard."""
        frags = []
        for s in self.slots:
            elt = element_bytes(s.dtype)
            strides = [elt] * len(s.shape)
            for i in range(len(s.shape) - 2, -1, -1):
                strides[i] = strides[i + 1] * s.shape[i + 1]
            for p in s.parts:
                # a box starts at the shard's column 0 (a column split is the shard itself)
                at = s.offset + p.row * (strides[0] if s.shape else 0)
                frags.append({"tensor": p.tensor, "offset": list(p.offset),
                              "shape": list(p.shape), "bufferId": self.buffer_id,
                              "bufferOffset": at, "strides": strides[:len(p.shape)]})
        return frags

    def worker(self, worker_id: str, node: str, segment: str, nic: str = "nic0"
               ) -> dict[str, Any]:
        """The direct worker of this rank for ``LoaderClient.register`` (its buffer holds every
        parameter shard whole, padding rows included)."""
        return {"workerId": worker_id, "rank": self.rank, "node": node, "nic": nic,
                "mode": "direct",
                "buffers": [{"bufferId": self.buffer_id, "segment": segment,
                             "size": self.nbytes}],
                "fragments": self.fragments()}


def _dtypes(manifest: Manifest | Mapping[str, str]) -> dict[str, str]:
    if isinstance(manifest, Manifest):
        return {t.name: t.rollout_dtype for t in manifest.tensors}
    return dict(manifest)


@dataclass(frozen=True)
class Ticket:
    """What every TP rank's :func:`load_direct` receives (as the one tensor name)."""

    loader_url: str
    token: str | None
    workers: list[str]
    dims: dict[str, Any]
    dtypes: dict[str, str]
    buffer_id: str
    result_dir: str
    nonce: str

    def encode(self) -> str:
        return TICKET + json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def decode(cls, name: str) -> Ticket:
        return cls(**json.loads(name[len(TICKET):]))


class SGLangRelay:
    """The driver side of one SGLang instance (TP ``tp``) on one node: registers one direct
    worker per TP rank (``<instance>-tp<r>``) laid out as SGLang's fused parameters, and runs
    updates through the Engine's weight-update session (see the module)."""

    def __init__(self, loader: LoaderClient, loader_url: str, token: str | None,
                 instance_id: str, dims: ModelDims, manifest: Manifest, tp: int,
                 result_dir: str | None = None) -> None:
        self.loader, self.loader_url, self.token = loader, loader_url, token
        self.direct_install = "inPlace"  # what :meth:`register` registered
        self.instance_id, self.dims, self.tp = instance_id, dims, tp
        self.dtypes = _dtypes(manifest)
        self.layouts = [FusedLayout(dims, self.dtypes, tp, r) for r in range(tp)]
        self.workers = [f"{instance_id}-tp{r}" for r in range(tp)]
        self.result_dir = result_dir or tempfile.mkdtemp(prefix="weight-relay-sglang-")

    def register(self, model: str, group: str, node: str, segment_prefix: str,
                 extra_workers: Sequence[Mapping[str, Any]] = (),
                 direct_install: str = "inPlace") -> Any:
        """Registers the instance: one direct worker per TP rank (segment
        ``<segment_prefix>-tp<r>``), plus ``extra_workers`` (a compat image for
        ``update_weights_from_disk``, say). ``direct_install="staged"`` makes :meth:`update`
        fetch while SGLang serves and install only inside SGLang's session (see the module)."""
        answer = self.loader.register(self.instance_id, model, group, node, [
            *(lay.worker(w, node, f"{segment_prefix}-tp{lay.rank}")
              for w, lay in zip(self.workers, self.layouts, strict=True)),
            *extra_workers], direct_install=direct_install)
        self.direct_install = direct_install
        return answer

    def ticket(self) -> Ticket:
        return Ticket(self.loader_url, self.token, list(self.workers), asdict(self.dims),
                      self.dtypes, self.layouts[0].buffer_id, self.result_dir,
                      uuid.uuid4().hex)

    def update(self, engine: Any, generation: int | None = None, timeout_s: int = 300,
               flush_cache: bool = True) -> Any:
        """Transfer, then load inside SGLang's session; returns the loader's progress. Raises
        ``UpdateFailedError`` (transfer, or a staged install; SGLang untouched) or
        :class:`WeightLoadError` (no rank loaded; the session is closed and SGLang accepts the
        next update). Staged, the transfer is a fetch and the install runs in the session."""
        staged = self.direct_install == "staged"
        if staged:
            progress = self.loader.fetch(generation, timeout_s)
        else:
            progress = self.loader.update(generation, timeout_s)
        try:
            ok, message = _answer(engine.begin_weight_update())
        except BaseException as e:
            if staged:
                self._decline(progress.update_id, f"SGLang begin_weight_update raised: {e!r}")
            raise
        if not ok:
            if staged:
                self._decline(progress.update_id, f"SGLang refused begin_weight_update: {message}")
            raise WeightLoadError(f"SGLang refused begin_weight_update: {message}", {})
        ticket = self.ticket()
        try:
            if staged:
                progress = self.loader.install(progress.update_id, timeout_s)
            import torch

            ok, message = _answer(engine.update_weights_from_tensor(
                named_tensors=[(ticket.encode(), torch.empty(0))], load_format=LOAD_FORMAT,
                flush_cache=flush_cache))
            failures = self._outcomes(ticket)
            if failures or not ok:
                raise WeightLoadError(
                    f"generation {progress.generation} not loaded into SGLang instance "
                    f"{self.instance_id}: " + "; ".join(
                        [f"rank {r}: {e}" for r, e in sorted(failures.items())]
                        + ([] if ok else [f"SGLang answered: {message}"])), failures)
        except BaseException:
            try:  # close the session whatever happened, without hiding why the load failed
                end_ok, end_message = _answer(engine.end_weight_update())
                if not end_ok:
                    _log.warning("SGLang end_weight_update: %s", end_message)
            except Exception as e:
                _log.warning("SGLang end_weight_update after a failed load: %s", e)
            raise
        end_ok, end_message = _answer(engine.end_weight_update())
        if not end_ok:
            raise WeightLoadError(f"SGLang refused end_weight_update: {end_message}", {})
        return progress

    def _decline(self, update_id: str, reason: str) -> None:
        """Ends the fetched update now (``RESUMED_OLD``, SGLang untouched) so the group need not
        wait for its deadline; a decline that fails is logged, never raised over the cause."""
        try:
            self.loader.decline(update_id, reason)
        except Exception as e:
            _log.warning("declining update %s failed (it ends at its deadline): %s", update_id, e)

    def _outcomes(self, ticket: Ticket) -> dict[int, str]:
        failures = {}
        for r in range(self.tp):
            path = _result_path(ticket, r)
            try:
                with open(path, encoding="utf-8") as fh:
                    outcome = json.load(fh)
                os.unlink(path)
            except (OSError, ValueError) as e:  # ValueError: an outcome file that is not JSON
                failures[r] = f"no outcome from the custom loader ({e})"
                continue
            if not outcome.get("loaded"):
                failures[r] = str(outcome.get("error"))
        return failures


def _answer(result: Any) -> tuple[bool, str]:
    """SGLang's Engine answers ``(success, message)`` (or an object with those fields)."""
    if isinstance(result, tuple):
        return bool(result[0]), str(result[1]) if len(result) > 1 else ""
    if result is None:
        return True, ""
    return bool(getattr(result, "success", True)), str(getattr(result, "message", ""))


def _result_path(ticket: Ticket, rank: int) -> str:
    return os.path.join(ticket.result_dir, f"{ticket.nonce}.rank{rank}.json")


_clients: dict[tuple[str, str | None], LoaderClient] = {}
_clients_lock = threading.Lock()


def _client(url: str, token: str | None) -> LoaderClient:
    with _clients_lock:
        c = _clients.get((url, token))
        if c is None or c.closed:
            c = _clients[(url, token)] = LoaderClient(url, token)
        return c


def _rank_and_group() -> tuple[int, Any]:
    if _get_parallel is None:
        return 0, None
    parallel = _get_parallel()
    return int(parallel.tp_rank), parallel.tp_group.cpu_group


def _prepare(model: Any, ticket: Ticket, rank: int) -> list[tuple[Any, Any]]:
    """(parameter, view) per slot of this rank, every name, shape and dtype checked."""
    if rank >= len(ticket.workers):
        raise UsageError(f"TP rank {rank} has no worker (workers {ticket.workers})")
    layout = FusedLayout(ModelDims(**ticket.dims), ticket.dtypes, len(ticket.workers), rank,
                         ticket.buffer_id)
    lc = _client(ticket.loader_url, ticket.token)
    lc._refuse_in_flight("load_direct")
    m, base, size, _ = lc.buffer_map(ticket.workers[rank], ticket.buffer_id)
    if size < layout.nbytes:
        raise UsageError(f"buffer of {ticket.workers[rank]} holds {size} bytes, the layout "
                         f"{layout.nbytes}")
    params = dict(model.named_parameters())
    pairs, problems = [], []
    for s in layout.slots:
        p = params.get(s.name)
        if p is None:
            problems.append(f"model has no parameter {s.name}")
            continue
        t = view(m, base + s.offset, s.dtype, s.shape, None, "torch", None)
        if tuple(p.shape) != tuple(t.shape) or p.dtype != t.dtype:
            problems.append(f"parameter {s.name}: model {tuple(p.shape)} {p.dtype}, "
                            f"published shard {tuple(t.shape)} {t.dtype}")
            continue
        pairs.append((p, t))
    if problems:
        raise UsageError("; ".join(problems))
    return pairs


def load_direct(model: Any, named_tensors: Sequence[tuple[str, Any]]) -> None:
    """SGLang's custom weight loader (``--custom-weight-loader`` and ``load_format``): on this TP
    rank, every parameter from the rank's own receive buffer, or none. Never raises (see the
    module): the outcome goes to the ticket's result file for the driver."""
    ticket: Ticket | None = None
    rank, group = 0, None
    pairs: list[tuple[Any, Any]] = []
    error = None
    try:
        names = [n for n, _ in named_tensors]
        if len(names) != 1 or not names[0].startswith(TICKET):
            raise UsageError(f"load_direct takes one weight-relay ticket, got {len(names)} "
                             "tensor(s)")
        ticket = Ticket.decode(names[0])
        rank, group = _rank_and_group()
        if group is None and len(ticket.workers) != 1:
            raise UsageError(f"TP {len(ticket.workers)} without SGLang's runtime context")
        pairs = _prepare(model, ticket, rank)
    except Exception as e:  # never into SGLang's scheduler: it would end the server
        error = f"{type(e).__name__}: {e}"
    try:  # every rank copies, or none: agree over SGLang's TP CPU group
        ready = error is None
        if group is not None:
            import torch
            import torch.distributed as dist

            flag = torch.tensor([1 if ready else 0], dtype=torch.int32)
            dist.all_reduce(flag, op=dist.ReduceOp.MIN, group=group)
            if ready and int(flag.item()) == 0:
                ready, error = False, "another TP rank could not load; nothing copied"
        if ready:
            import torch

            with torch.no_grad():
                for p, t in pairs:
                    p.data.copy_(t)
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
    if error is not None:
        _log.error("weight-relay load on TP rank %d failed, weights unchanged: %s", rank, error)
    if ticket is not None:
        try:
            path = _result_path(ticket, rank)
            with open(path + ".tmp", "w", encoding="utf-8") as fh:
                json.dump({"rank": rank, "loaded": error is None, "error": error,
                           "params": len(pairs)}, fh)
            os.replace(path + ".tmp", path)
        except OSError as e:
            _log.error("weight-relay load outcome of TP rank %d not written: %s", rank, e)


def disk_directory(loader: LoaderClient, worker_id: str | None, directory: str) -> str:
    """The ``model_path`` for ``update_weights_from_disk``: one ``model.safetensors`` linking to
    the worker's compat image in shared memory."""
    return image_directory(loader, worker_id, directory)
