"""save_file: round trips of every dtype, typed metadata, codecs, GGUF and
safetensors outputs, and that a failed write leaves nothing behind."""

import os
import warnings

import numpy as np
import pytest

import boltpack
from conftest import SAFETENSORS, bits, read_safetensors


def sample_tensors():
    rng = np.random.default_rng(7)
    return {
        "w.f32": rng.standard_normal((64, 96), dtype=np.float32),
        "w.f16": rng.standard_normal((8, 32)).astype(np.float16),
        "w.f64": rng.standard_normal(5),
        "idx.i64": np.arange(-3, 9, dtype=np.int64).reshape(3, 4),
        "mask.u8": (np.arange(10) % 3).astype(np.uint8),
        "flag.bool": np.array([True, False, True]),
        "scalar": np.array(2.5, dtype=np.float32),
        "strided": np.arange(40, dtype=np.float32).reshape(5, 8)[:, ::2],  # not contiguous
    }


def test_roundtrip_every_dtype(work):
    tensors = sample_tensors()
    meta = {"name": "demo", "layers": 4, "big": 2**63 + 5, "ratio": 0.25, "ok": True,
            "vocab": ["a", "b", "c"], "dims": [1, 2, 3]}
    path = work / "saved.bolt"
    boltpack.save_file(tensors, path, metadata=meta)
    with boltpack.safe_open(path) as f:
        assert set(f.keys()) == set(tensors)
        for name, value in tensors.items():
            assert np.array_equal(f.get_tensor(name), value), name
        got = f.metadata()
    for k, v in meta.items():
        assert got[k] == v and type(got[k]) is type(v), k


def test_bf16_from_torch(work):
    torch = pytest.importorskip("torch")
    t = torch.randn(16, 64).to(torch.bfloat16)
    path = work / "bf16.bolt"
    boltpack.save_file({"w": t}, path, codec="bf16-huffman")
    with boltpack.safe_open(path, framework="pt") as f:
        assert f.info("w")["codec"] == "bf16-huffman"
        assert torch.equal(f.get_tensor("w"), t)


def test_codecs_and_fallback(work):
    rng = np.random.default_rng(1)
    tensors = {"blk.0.ffn": rng.standard_normal((32, 256), dtype=np.float32),
               "blk.0.norm": rng.standard_normal(256, dtype=np.float32),
               "odd": rng.standard_normal((4, 33), dtype=np.float32)}
    path = work / "codecs.bolt"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        boltpack.save_file(tensors, path, codec={"*.ffn": "q8_0", "odd": "q8_0", "*": "f16"})
    with boltpack.safe_open(path) as f:
        assert f.info("blk.0.ffn")["codec"] == "q8_0"
        assert f.info("blk.0.norm")["codec"] == "f16"
        assert f.info("odd")["codec"] != "q8_0"  # 33 columns: not whole blocks
        x, y = tensors["blk.0.ffn"], f.get_tensor("blk.0.ffn")
        assert np.sqrt(np.mean((x - y) ** 2)) / np.sqrt(np.mean(x ** 2)) < 0.01
    assert any("fallback" in str(w.message) for w in caught)


def test_gguf_and_safetensors_outputs(work):
    # GGUF has no rank 0 (a scalar is one element of rank 1 there).
    tensors = {k: v for k, v in sample_tensors().items() if v.dtype in (np.float32, np.float16) and v.ndim}
    st = work / "saved.safetensors"
    boltpack.save_file(tensors, st, metadata={"format": "pt"})
    ref = read_safetensors(st)
    for name, value in tensors.items():
        assert np.array_equal(bits(ref[name][1]), bits(np.ascontiguousarray(value))), name
    gg = work / "saved.gguf"
    boltpack.save_file(tensors, gg, metadata={"general.architecture": "demo"})
    with boltpack.safe_open(gg) as f:
        for name, value in tensors.items():
            assert np.array_equal(f.get_tensor(name), value), name


def test_model_through_save_file_matches_cli(cli, work):
    ref = read_safetensors(SAFETENSORS)
    with boltpack.safe_open(SAFETENSORS) as f:
        tensors = {n: f.get_tensor(n) for n in f.offset_keys()}
    ours = work / "model-saved.bolt"
    boltpack.save_file(tensors, ours)
    back = work / "model-saved.safetensors"
    cli("convert", ours, "-o", back)
    again = read_safetensors(back)
    for name, (_, expected) in ref.items():
        assert np.array_equal(bits(again[name][1]), bits(expected)), name


def test_failed_save_leaves_nothing(work):
    path = work / "never.bolt"
    with pytest.raises(boltpack.BoltpackError) as e:
        boltpack.save_file({"w": np.zeros((4, 4), np.float32)}, path, codec={"*": "no-such-codec"})
    assert "no-such-codec" in str(e.value)
    with pytest.raises(boltpack.BoltpackError):
        boltpack.save_file({"w": np.zeros((4, 4), np.complex128)}, path)
    with pytest.raises(boltpack.BoltpackError):
        boltpack.save_file({"w": np.zeros(3, np.float32)}, path, metadata={"bad": {"nested": 1}})
    assert not path.exists()
    assert [p for p in os.listdir(work) if p.startswith("never")] == []


def test_save_and_load_bytes():
    tensors = {"a": np.arange(6, dtype=np.float32).reshape(2, 3)}
    data = boltpack.save(tensors)
    loaded = boltpack.load(data, framework="np")
    assert np.array_equal(loaded["a"], tensors["a"])


def test_recipe_and_elastic_as_the_cli(cli, work):
    """save_file(recipe=, elastic=) writes what `bolt-pack convert` writes from the same tensors."""
    from conftest import ELASTIC_JSON, GGUF_F16, SOURCE
    recipe = SOURCE / "recipes" / "tinystories-656k.textproto"
    with boltpack.safe_open(GGUF_F16) as f:
        tensors = {n: f.get_tensor(n) for n in f.offset_keys()}
        meta = f.metadata()
    ours = work / "recipe-saved.bolt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the recipe's fallbacks (iq2_xxs -> q8_0) warn
        boltpack.save_file(tensors, ours, recipe=str(recipe))
    theirs = work / "recipe-cli.bolt"
    cli("convert", GGUF_F16, "-o", theirs, "--recipe", recipe)
    with boltpack.safe_open(ours) as a, boltpack.safe_open(theirs) as b:
        assert a.keys() == b.keys()
        for n in a.keys():
            assert a.info(n)["codec"] == b.info(n)["codec"], n
            assert np.array_equal(bits(a.get_tensor(n)), bits(b.get_tensor(n))), n
    elastic = work / "elastic-saved.bolt"
    boltpack.save_file(tensors, elastic, metadata={k: v for k, v in meta.items() if not k.startswith("gguf.")},
                       elastic=str(ELASTIC_JSON))
    with boltpack.safe_open(elastic, budget="ffn50") as f:
        assert "ffn50" in f.budgets()
        assert f.get_slice("blk.0.ffn_up.weight").get_shape() == [192, 128]
