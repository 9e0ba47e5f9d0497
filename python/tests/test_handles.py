"""The torch path, zero-copy views and their lifetime, and errors."""

import gc

import numpy as np
import pytest

import boltpack
from conftest import SAFETENSORS, bits, read_safetensors


def test_torch_dtypes_and_values(cli, work, bf16_model):
    torch = pytest.importorskip("torch")
    packed = work / "torch-huffman.bolt"
    cli("convert", bf16_model, "-o", packed, "--codec", "*=bf16-huffman")
    ref = read_safetensors(bf16_model)
    with boltpack.safe_open(packed, framework="pt") as f:
        for name in f.keys():
            t = f.get_tensor(name)
            assert isinstance(t, torch.Tensor) and t.dtype == torch.bfloat16
            assert np.array_equal(t.view(torch.int16).numpy().view(np.uint16), ref[name][1]), name
            part = f.get_slice(name)[:3]
            assert part.dtype == torch.bfloat16 and torch.equal(part, t[:3])
    loaded = boltpack.load_file(packed)
    assert set(loaded) == set(ref) and all(v.dtype == torch.bfloat16 for v in loaded.values())


def test_f32_torch_is_float32(bolt_model):
    torch = pytest.importorskip("torch")
    with boltpack.safe_open(bolt_model, framework="pt") as f:
        t = f.get_tensor(f.keys()[0])
        assert t.dtype == torch.float32


def test_zero_copy_view_outlives_the_handle(bolt_model):
    ref = read_safetensors(SAFETENSORS)
    name = max(ref, key=lambda n: ref[n][1].size)
    f = boltpack.safe_open(bolt_model)
    a = f.get_tensor(name)
    assert not a.flags.writeable, "a view of the mapping is read-only"
    assert a.base is not None and not a.flags.owndata, "raw f32 of an uncompressed stream is a view"
    assert a.ctypes.data % 64 == 0
    f.close()
    del f
    gc.collect()
    assert np.array_equal(bits(a), bits(ref[name][1]))
    with pytest.raises(boltpack.BoltpackError):
        closed = boltpack.safe_open(bolt_model)
        closed.close()
        closed.get_tensor(name)


def test_decoded_arrays_are_owned_and_writable(cli, work):
    packed = work / "owned-q8.bolt"
    cli("convert", SAFETENSORS, "-o", packed, "--codec", "*=q8_0")
    with boltpack.safe_open(packed) as f:
        a = f.get_tensor(f.keys()[0])
    a += 1  # our own memory


def test_errors(work, bolt_model):
    with pytest.raises(boltpack.NotFoundError) as e:
        boltpack.safe_open(work / "missing.bolt")
    assert "missing.bolt" in str(e.value)
    with boltpack.safe_open(bolt_model) as f:
        with pytest.raises(KeyError) as e:
            f.get_tensor("no.such.tensor")
        assert "no.such.tensor" in str(e.value)
    with pytest.raises(boltpack.NotFoundError):
        boltpack.safe_open(bolt_model, view="nonesuch")
    with pytest.raises(boltpack.NotFoundError):
        boltpack.safe_open(bolt_model, budget="nonesuch")
    with pytest.raises(ValueError):
        boltpack.safe_open(bolt_model, framework="jax")


def test_truncated_file_is_refused(work, bolt_model):
    bad = work / "truncated.bolt"
    data = bolt_model.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(boltpack.BoltpackError) as e:
        boltpack.safe_open(bad)
    assert "truncated.bolt" in str(e.value)
    assert not isinstance(e.value, boltpack.ChecksumError)


def _damage_largest_tensor(cli, src, dst, codec):
    """Flips one bit inside the largest tensor's first stream; its name."""
    cli("convert", src, "-o", dst, "--codec", f"*={codec}")
    with boltpack.safe_open(dst) as f:
        name = max(f.keys(), key=lambda n: f.info(n)["stored_bytes"])
        needle = bytes(f.get_stored(name).streams[0].data[:64])
    data = bytearray(dst.read_bytes())
    at = data.find(needle)
    assert at > 0 and data.find(needle, at + 1) < 0, "the stream's first bytes locate it"
    data[at + 10] ^= 0x40
    dst.write_bytes(bytes(data))
    return name


@pytest.mark.parametrize("codec", ["f32", "q8_0"])
def test_damaged_bytes_raise_checksum_error(cli, work, codec):
    damaged = work / f"damaged-{codec}.bolt"
    name = _damage_largest_tensor(cli, SAFETENSORS, damaged, codec)
    with boltpack.safe_open(damaged) as f:
        with pytest.raises(boltpack.ChecksumError) as e:
            f.get_tensor(name)
        assert name in str(e.value) and "damaged" in str(e.value)
        with pytest.raises(boltpack.ChecksumError):
            f.verify()
        other = [n for n in f.keys() if n != name]
        f.get_tensor(other[0])  # the rest still reads


def test_check_false_skips_checksums(cli, work):
    damaged = work / "damaged-nocheck.bolt"
    name = _damage_largest_tensor(cli, SAFETENSORS, damaged, "f32")
    with boltpack.safe_open(damaged, check=False) as f:
        a = f.get_tensor(name)  # opted out: the damaged bytes come back as they are
        ref = read_safetensors(SAFETENSORS)[name][1]
        assert a.shape == ref.shape and not np.array_equal(bits(a), bits(ref))
    with boltpack.safe_open(damaged) as f, pytest.raises(boltpack.ChecksumError):
        f.get_tensor(name)


def test_torch_plain_tensor_is_a_copy_on_write_view(work, bolt_model):
    torch = pytest.importorskip("torch")
    ref = read_safetensors(SAFETENSORS)
    name = max(ref, key=lambda n: ref[n][1].size)
    before = bolt_model.read_bytes()
    with boltpack.safe_open(bolt_model, framework="pt") as f:
        t = f.get_tensor(name)
        assert torch.equal(t, torch.from_numpy(ref[name][1].copy()))
        t += 1  # private pages: the file stays as it was
    assert bolt_model.read_bytes() == before
    with boltpack.safe_open(bolt_model, framework="pt") as f:  # as safetensors, a handle maps the file once
        assert torch.equal(f.get_tensor(name), torch.from_numpy(ref[name][1].copy()))
    with boltpack.safe_open(SAFETENSORS, framework="pt") as f:  # a safetensors file: its own offsets
        for n, (_, expected) in ref.items():
            assert torch.equal(f.get_tensor(n), torch.from_numpy(expected.copy())), n
