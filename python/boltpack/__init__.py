"""bolt-pack for Python: read .bolt, GGUF and safetensors files, write .bolt.

The API is safetensors' own, so that switching is a changed import::

    import boltpack
    with boltpack.safe_open("model.bolt", framework="pt") as f:
        for name in f.keys():
            w = f.get_tensor(name)            # decoded straight into the tensor
        rows = f.get_slice("wte")[0:128, :]   # reads only the chunks it needs

plus what only bolt-pack has: ``view="draft"`` and ``budget="ffn50"`` on
``safe_open``, ``get_stored`` (the stored blocks an engine uses in place)
and codecs on ``save_file``.

dtypes: F32, F16 and the integer types arrive as the NumPy or torch dtype of
the same name. BF16 arrives as ``torch.bfloat16`` under ``framework="pt"``;
NumPy has no bfloat16, so under ``framework="np"`` it arrives as
``ml_dtypes.bfloat16`` when ml_dtypes is installed and as ``uint16`` (the
same bits) otherwise. A tensor a codec quantized (q8_0, nvfp4, ...) decodes
to its logical dtype.
"""

from __future__ import annotations

import fnmatch
import os
import warnings
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _boltpack
from ._boltpack import BoltpackError, ChecksumError, NotFoundError

__all__ = [
    "BoltpackError",
    "ChecksumError",
    "NotFoundError",
    "StoredStream",
    "StoredTensor",
    "load",
    "load_file",
    "safe_open",
    "save",
    "save_file",
]

__version__ = _boltpack.library_version.split()[-1]

try:  # NumPy's bfloat16, when the optional ml_dtypes package is there
    import ml_dtypes as _ml_dtypes

    _NP_BF16 = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the machine
    _NP_BF16 = None

# Safetensors dtype names -> NumPy dtypes (BF16 handled apart).
_NP_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U64": np.uint64,
    "U32": np.uint32,
    "U16": np.uint16,
    "U8": np.uint8,
    "BOOL": np.bool_,
}
# Safetensors dtype names -> torch dtypes, for tensors over a file mapping.
_TORCH_DTYPES = {}


def _init_torch_dtypes():
    torch = _torch()
    _TORCH_DTYPES.update({"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
                          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
                          "U8": torch.uint8, "BOOL": torch.bool})


# The library's output for a logical dtype: floats decode to themselves,
# everything else is its stored elements ("native").
_DECODE_AS = {"F32": "f32", "F16": "f16", "BF16": "bf16"}


def _np_dtype(dtype: str) -> np.dtype:
    if dtype == "BF16":
        return _NP_BF16 if _NP_BF16 is not None else np.dtype(np.uint16)
    if dtype not in _NP_DTYPES:
        raise BoltpackError(f"dtype {dtype} has no NumPy equivalent")
    return np.dtype(_NP_DTYPES[dtype])


def _torch():
    import torch  # imported only for framework="pt"

    return torch


def _to_framework(array: np.ndarray, dtype: str, framework: str, device: str):
    """Turns a decoded NumPy array into the framework's tensor, sharing memory."""
    if framework == "np":
        return array
    torch = _torch()
    if dtype == "BF16":
        tensor = torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    elif dtype == "U16" or dtype == "U32" or dtype == "U64":
        tensor = torch.from_numpy(array.view(np.dtype(f"i{array.dtype.itemsize}")))
    else:
        tensor = torch.from_numpy(array)
    return tensor if device == "cpu" else tensor.to(device)


def _check_framework(framework: str, device: str) -> Tuple[str, str]:
    aliases = {"np": "np", "numpy": "np", "pt": "pt", "torch": "pt", "pytorch": "pt"}
    if framework not in aliases:
        raise ValueError(f"framework {framework!r}: expected 'np' or 'pt'")
    framework = aliases[framework]
    device = str(device)
    if framework == "np" and device != "cpu":
        raise ValueError("framework='np' loads to device='cpu' only")
    return framework, device


class StoredStream:
    """One stored stream of a tensor: its role, compression and bytes.

    ``data`` is a read-only uint8 array over the file's mapping (compressed
    bytes when ``compression`` is not 0); it keeps the file open while it lives.
    The bytes are not checked against their checksum: call ``verify()``.
    """

    __slots__ = ("role", "compression", "raw_length", "data")

    def __init__(self, role: str, compression: int, raw_length: int, data: np.ndarray):
        self.role = role
        self.compression = compression
        self.raw_length = raw_length
        self.data = data

    def __repr__(self) -> str:
        return f"StoredStream(role={self.role!r}, compression={self.compression}, bytes={self.data.size})"


class StoredTensor:
    """A tensor as the file stores it: codec, codec parameters and streams."""

    __slots__ = ("name", "shape", "dtype", "codec", "params", "streams")

    def __init__(self, name, shape, dtype, codec, params, streams):
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.codec = codec
        self.params = params
        self.streams = streams

    def __repr__(self) -> str:
        return (f"StoredTensor(name={self.name!r}, codec={self.codec!r}, params={self.params!r}, "
                f"shape={self.shape}, streams={self.streams!r})")


def _normalize_index(index, shape: Tuple[int, ...]):
    """(row range, column range, post-slicing) for a get_slice index.

    The library reads rows [r0, r1) of the first dimension and columns
    [c0, c1) of the last; steps, integers and middle dimensions are applied
    afterwards to the decoded block with NumPy.
    """
    if not isinstance(index, tuple):
        index = (index,)
    if any(i is Ellipsis for i in index):
        at = next(k for k, i in enumerate(index) if i is Ellipsis)
        fill = len(shape) - (len(index) - 1)
        index = index[:at] + (slice(None),) * max(fill, 0) + index[at + 1:]
    if len(index) > max(len(shape), 1) and not (len(shape) == 0 and len(index) == 0):
        raise IndexError(f"too many indices ({len(index)}) for a tensor of {len(shape)} dimensions")
    index = index + (slice(None),) * (len(shape) - len(index))
    return index


def _range_of(i, n: int, dim: int):
    """(begin, end, what to apply to the block's axis) for index `i` of a dim of n."""
    if isinstance(i, slice):
        picked = range(*i.indices(n))
        if len(picked) == 0:
            return 0, 0, slice(None)
        lo, hi = min(picked[0], picked[-1]), max(picked[0], picked[-1]) + 1
        if picked.step == 1:
            return lo, hi, slice(None)
        # A step: read the covered range, then pick from it.
        return lo, hi, np.arange(picked[0] - lo, picked[-1] - lo + (1 if picked.step > 0 else -1), picked.step)
    try:
        k = int(i)
    except TypeError:
        raise TypeError(f"index {i!r} of dimension {dim}: only integers and slices") from None
    if k < 0:
        k += n
    if not 0 <= k < n:
        raise IndexError(f"index {i} is out of range for dimension {dim} of size {n}")
    return k, k + 1, 0


def _apply_per_axis(block: np.ndarray, post) -> np.ndarray:
    """Applies each axis' index in turn (two index arrays at once would pair
    up elements instead of crossing them); integer indices drop their axis."""
    axis = 0
    for p in post:
        if isinstance(p, slice) and p == slice(None):
            axis += 1
            continue
        if isinstance(p, slice):
            block = block[(slice(None),) * axis + (p,)]
            axis += 1
        elif isinstance(p, np.ndarray):
            block = np.take(block, p, axis=axis)
            axis += 1
        else:
            n = block.shape[axis]
            k = int(p)
            if k < 0:
                k += n
            if not 0 <= k < n:
                raise IndexError(f"index {p} is out of range for dimension {axis} of size {n}")
            block = np.take(block, k, axis=axis)
    return block


class SafeSlice:
    """safetensors' PySafeSlice: shape and dtype without reading; [..] reads."""

    def __init__(self, handle: "SafeOpen", name: str):
        self._handle = handle
        self._name = name
        shape, dtype, _, _ = handle._reader.info(name)
        self._shape = tuple(shape)
        self._dtype = dtype

    def get_shape(self) -> List[int]:
        return list(self._shape)

    def get_dtype(self) -> str:
        return self._dtype

    @property
    def shape(self) -> Tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> str:
        return self._dtype

    def __len__(self) -> int:
        return self._shape[0] if self._shape else 0

    def __getitem__(self, index):
        shape = self._shape
        if not shape:
            raise IndexError("a tensor of rank 0 cannot be sliced: use get_tensor")
        index = _normalize_index(index, shape)
        r0, r1, row_post = _range_of(index[0], shape[0], 0)
        if len(shape) >= 2:
            c0, c1, col_post = _range_of(index[-1], shape[-1], len(shape) - 1)
        else:
            c0, c1, col_post = 0, 1, None
        block = self._handle._decode_block(self._name, self._dtype, shape, r0, r1, c0, c1)
        post = [row_post] + list(index[1:-1]) + ([col_post] if len(shape) >= 2 else [])
        block = _apply_per_axis(block, post)
        block = np.asarray(block)  # a 0-d result stays 0-d (ascontiguousarray makes it 1-d)
        if not block.flags.c_contiguous:
            block = block.copy(order="C")
        return _to_framework(block, self._dtype, self._handle._framework, self._handle._device)


class SafeOpen:
    """An open model; use as ``with boltpack.safe_open(...) as f:``."""

    def __init__(self, path, framework: str = "np", device: str = "cpu", *, view: Optional[str] = None,
                 budget: Optional[str] = None, verify: bool = False, threads: int = 0, check: bool = True):
        self._framework, self._device = _check_framework(framework, device)
        if self._framework == "pt" and not _TORCH_DTYPES:
            _init_torch_dtypes()
        self._path = os.fspath(path)
        self._threads = int(threads)
        self._reader = _boltpack._Reader(self._path, view or "", budget or "", bool(verify), bool(check))
        self._storages = {}  # path -> copy-on-write torch storage of the file (framework="pt")
        self._budget = budget

    # ---- context manager --------------------------------------------------
    def __enter__(self) -> "SafeOpen":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Closes the file; arrays still viewing its mapping keep it open."""
        self._reader.close()
        self._storages = {}  # tensors over a storage keep it alive

    # ---- safetensors' API -------------------------------------------------
    def keys(self) -> List[str]:
        """Tensor names, sorted (as safetensors' keys())."""
        return sorted(self._reader.names())

    def offset_keys(self) -> List[str]:
        """Tensor names in the file's order."""
        return list(self._reader.names())

    def metadata(self) -> Dict[str, Any]:
        """The file's metadata, typed: ints stay ints, arrays are lists."""
        return self._reader.metadata()

    def get_tensor(self, name: str):
        """The whole tensor, decoded (and checked) into a new array or tensor."""
        shape, dtype, _, _ = self._reader.info(name)
        if self._framework == "pt" and self._device == "cpu":
            tensor = self._plain_torch(name, dtype, shape)
            if tensor is not None:
                return tensor
        array = self._plain_view(name, dtype, shape) if self._framework == "np" else None
        if array is None:
            array = _new_array(shape, _np_dtype(dtype))
            self._reader.decode_into(name, _DECODE_AS.get(dtype, "native"), _byte_view(array), self._threads)
        return _to_framework(array, dtype, self._framework, self._device)

    def get_slice(self, name: str) -> SafeSlice:
        return SafeSlice(self, name)

    # ---- bolt-pack's own ---------------------------------------------------
    def views(self) -> List[str]:
        return list(self._reader.views())

    def budgets(self) -> List[str]:
        return list(self._reader.budgets())

    def get_stored(self, name: str) -> StoredTensor:
        """The tensor's stored streams as read-only uint8 views of the file."""
        shape, dtype, codec, _ = self._reader.info(name)
        codec, params, streams = self._reader.stored(name)
        return StoredTensor(name, tuple(shape), dtype, codec, params,
                            [StoredStream(*s) for s in streams])

    def info(self, name: str) -> Dict[str, Any]:
        shape, dtype, codec, stored_bytes = self._reader.info(name)
        return {"shape": tuple(shape), "dtype": dtype, "codec": codec, "stored_bytes": stored_bytes}

    def verify(self) -> None:
        """Checks every checksum of the file; raises ChecksumError on a mismatch."""
        self._reader.verify()

    # ---- internals ----------------------------------------------------------
    def _plain_view(self, name: str, dtype: str, shape) -> Optional[np.ndarray]:
        """Zero copy: a read-only array over the mapping, when the stored bytes
        are the tensor's elements as they are (raw, uncompressed, aligned)."""
        raw = self._reader.plain_bytes(name)
        if raw is None:
            return None
        np_dtype = _np_dtype(dtype)
        if raw.ctypes.data % np_dtype.alignment != 0:
            return None
        return raw.view(np_dtype).reshape(tuple(shape))

    def _plain_torch(self, name: str, dtype: str, shape):
        """Zero copy under torch, which has no read-only tensors: the elements
        checked in place (as _plain_view), then a tensor over a copy-on-write
        mapping of the same file pages (UntypedStorage.from_file, shared=False,
        as safetensors maps them): writes stay the process's own, never the
        file's."""
        raw = self._reader.plain_bytes(name)  # checks the checksum (unless check=False)
        if raw is None or dtype not in _TORCH_DTYPES:
            return None
        path, offset = self._reader.location(name)
        torch = _torch()
        itemsize = torch.empty(0, dtype=_TORCH_DTYPES[dtype]).element_size()
        if offset % itemsize != 0:
            return None
        storage = self._storages.get(path)
        if storage is None:
            storage = torch.UntypedStorage.from_file(path, False, os.path.getsize(path))
            self._storages[path] = storage
        t = torch.empty(0, dtype=torch.uint8)
        t.set_(storage, offset, (raw.size,))
        return t.view(_TORCH_DTYPES[dtype]).view(tuple(int(d) for d in shape))

    def _decode_block(self, name: str, dtype: str, shape, r0, r1, c0, c1) -> np.ndarray:
        out_shape = (r1 - r0,) + tuple(shape[1:-1]) + ((c1 - c0,) if len(shape) >= 2 else ())
        array = _new_array(out_shape, _np_dtype(dtype))
        if self._budget:
            whole = _new_array(shape, _np_dtype(dtype))
            self._reader.decode_into(name, _DECODE_AS.get(dtype, "native"), _byte_view(whole), self._threads)
            return whole[r0:r1, ..., c0:c1] if len(shape) >= 2 else whole[r0:r1]
        self._reader.decode_range_into(name, r0, r1, c0, c1, _DECODE_AS.get(dtype, "native"),
                                       _byte_view(array), self._threads)
        return array


def _new_array(shape, dtype: np.dtype) -> np.ndarray:
    """An uninitialized array for a decode, in the library's pooled huge pages."""
    shape = tuple(int(d) for d in shape)
    count = 1
    for d in shape:
        count *= d
    return _boltpack.new_buffer(count * dtype.itemsize).view(dtype).reshape(shape)


def _byte_view(array: np.ndarray) -> np.ndarray:
    return array.reshape(-1).view(np.uint8)


def safe_open(path, framework: str = "np", device: str = "cpu", *, view: Optional[str] = None,
              budget: Optional[str] = None, verify: bool = False, threads: int = 0,
              check: bool = True) -> SafeOpen:
    """Opens a .bolt, GGUF (a split set by its first file) or safetensors file
    (or a sharded index .json).

    view: a .bolt file's view ("full", "draft", ...); budget: one of its
    elastic budgets (tensors cut to it). verify: check every checksum now
    (decodes check what they read either way). threads: for decoding, 0 = all.
    check=False: reads check no checksum (for a file verified before); a raw
    tensor's view then reads nothing until it is used, as safetensors' does.
    """
    return SafeOpen(path, framework, device, view=view, budget=budget, verify=verify, threads=threads, check=check)


def load_file(path, device: str = "cpu", *, framework: str = "pt", view: Optional[str] = None,
              budget: Optional[str] = None) -> Dict[str, Any]:
    """Every tensor of the file, as safetensors.torch.load_file (framework="pt")."""
    with safe_open(path, framework=framework, device=device, view=view, budget=budget) as f:
        return {name: f.get_tensor(name) for name in f.offset_keys()}


# ---- writing -------------------------------------------------------------------

def _tensor_item(name: str, value) -> Tuple[str, str, List[int], Any]:
    """(name, dtype, shape, C-contiguous buffer) of a NumPy array or torch tensor."""
    if not isinstance(name, str):
        raise TypeError(f"tensor names must be str, not {type(name).__name__}")
    if type(value).__module__.startswith("torch"):
        torch = _torch()
        t = value.detach().to("cpu").contiguous()
        if t.dtype == torch.bfloat16:
            return name, "BF16", list(t.shape), t.view(torch.int16).numpy()
        if not _TORCH_DTYPES:
            _init_torch_dtypes()
        names = {v: k for k, v in _TORCH_DTYPES.items()}
        if t.dtype not in names:
            raise BoltpackError(f"tensor {name!r}: torch dtype {t.dtype} cannot be saved")
        return name, names[t.dtype], list(t.shape), t.numpy()
    array = np.asarray(value)  # 0-d stays 0-d (ascontiguousarray makes it 1-d)
    if not array.flags.c_contiguous:
        array = array.copy(order="C")
    if _NP_BF16 is not None and array.dtype == _NP_BF16:
        return name, "BF16", list(array.shape), array.view(np.uint16)
    for dtype_name, np_type in _NP_DTYPES.items():
        if array.dtype == np.dtype(np_type):
            return name, dtype_name, list(array.shape), array
    raise BoltpackError(f"tensor {name!r}: NumPy dtype {array.dtype} cannot be saved")


def _codec_rules(codec) -> List[str]:
    """--codec rule texts from {"glob": "codec[:k=v,...]"} (first match wins)."""
    if codec is None:
        return []
    if isinstance(codec, str):
        return [f"*={codec}"]
    rules = []
    for pattern, choice in (codec.items() if isinstance(codec, Mapping) else codec):
        if isinstance(choice, Mapping):  # {"codec": "nvfp4", "tensor_scale": 0.5}
            choice = dict(choice)
            cid = choice.pop("codec")
            params = ",".join(f"{k}={_param_text(v)}" for k, v in choice.items())
            choice = f"{cid}:{params}" if params else cid
        rules.append(f"{pattern}={choice}")
    return rules


def _param_text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def save_file(tensors: Mapping[str, Any], filename, metadata: Optional[Mapping[str, Any]] = None, *,
              codec: Union[None, str, Mapping[str, Any], Sequence[Tuple[str, Any]]] = None,
              recipe: Optional[str] = None, elastic: Optional[str] = None, threads: int = 0,
              zstd_level: int = 0, durable: bool = True) -> None:
    """Writes `tensors` (NumPy arrays or torch tensors) to `filename`.

    The format follows the extension: .bolt (with codecs), .gguf or
    .safetensors. codec: {"glob": "codec[:key=value,...]"} rules, first
    match wins ("keep" stores a tensor as it is), as `bolt-pack convert
    --codec`; recipe: a recipe file's path; elastic: an elastic authoring
    JSON's path. The file is written whole or not at all.
    """
    if not _boltpack.has_writer:
        raise BoltpackError("this build of boltpack reads only (built against libboltpack_read)")
    items = [_tensor_item(name, value) for name, value in tensors.items()]
    notes = _boltpack.save(os.fspath(filename), items, dict(metadata or {}), _codec_rules(codec),
                           recipe or "", elastic or "", int(threads), int(zstd_level), bool(durable))
    for note in notes:
        warnings.warn(note, stacklevel=2)


def save(tensors: Mapping[str, Any], metadata: Optional[Mapping[str, Any]] = None, **kwargs) -> bytes:
    """save_file into memory (as safetensors' save): the file's bytes."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out.bolt")
        save_file(tensors, path, metadata, **kwargs)
        with open(path, "rb") as fh:
            return fh.read()


def load(data: bytes, framework: str = "pt") -> Dict[str, Any]:
    """Tensors of a .bolt file's bytes (as safetensors' load)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "in.bolt")
        with open(path, "wb") as fh:
            fh.write(data)
        with safe_open(path, framework=framework) as f:
            return {name: _own(f.get_tensor(name)) for name in f.offset_keys()}


def _own(x):
    """A copy that does not view a file's mapping."""
    return x.copy() if isinstance(x, np.ndarray) else x.clone()
