"""Shared fixtures: the shipped TinyStories-656K, the CLI, and a reference
reader of safetensors files written here from the format's spec (8-byte
header length, JSON header, data), independent of the module under test."""

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

SOURCE = Path(os.environ.get("BOLTPACK_SOURCE_DIR", Path(__file__).resolve().parents[2]))
MODEL_DIR = SOURCE / "testdata" / "tinystories-656k"
SAFETENSORS = MODEL_DIR / "model.safetensors"
GGUF_F16 = MODEL_DIR / "TinyStories-656K.f16.gguf"
GGUF_Q8 = MODEL_DIR / "tinystories-656k-q8_0.from-infer-zero.gguf"
GGUF_EXPERTS = SOURCE / "testdata" / "gguf" / "ggml-writer-experts.gguf"
ELASTIC_JSON = SOURCE / "recipes" / "tinystories-656k-elastic.json"

_ST_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8", "I32": "<i4",
              "I16": "<i2", "I8": "i1", "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?"}


def read_safetensors(path):
    """{name: (dtype, numpy array)}: BF16 as uint16 bits."""
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        array = np.frombuffer(data[base + begin:base + end], dtype=np.dtype(_ST_DTYPES[t["dtype"]]))
        out[name] = (t["dtype"], array.reshape(t["shape"]))
    return out


def bits(array):
    """The array's bytes as unsigned integers of its width, for bit-exact checks."""
    a = np.ascontiguousarray(array)
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.itemsize in (1, 2, 4, 8) else a


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("BOLTPACK_CLI") or shutil.which("bolt-pack")
    if not path:
        pytest.skip("no bolt-pack CLI (set BOLTPACK_CLI)")

    def run(*args, ok=True):
        r = subprocess.run([path, *map(str, args)], capture_output=True, text=True)
        if ok and r.returncode != 0:
            raise AssertionError(f"bolt-pack {' '.join(map(str, args))} failed ({r.returncode}): {r.stderr}")
        return r

    return run


@pytest.fixture(scope="session")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("boltpack")


@pytest.fixture(scope="session")
def bf16_model(cli, work):
    """The model in bf16 (the lossless bf16 codecs take bf16)."""
    path = work / "model-bf16.safetensors"
    cli("convert", SAFETENSORS, "-o", path, "--codec", "*=bf16")
    return path


@pytest.fixture(scope="session")
def bolt_model(cli, work):
    path = work / "model.bolt"
    cli("convert", SAFETENSORS, "-o", path)
    return path
