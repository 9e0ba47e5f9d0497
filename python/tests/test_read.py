"""Reading: every codec, view and budget against the CLI's decode; slices
against NumPy slicing; GGUF and safetensors through the same calls."""

import numpy as np
import pytest

import boltpack
from conftest import (ELASTIC_JSON, GGUF_EXPERTS, GGUF_F16, GGUF_Q8, SAFETENSORS, bits, read_safetensors)

# Every registered codec that encodes, with the input dtype it takes.
F32_CODECS = ["f32", "f16", "bf16", "raw", "q8_0", "mxfp4", "nvfp4", "nvfp4-ggml", "int4-g128", "iq2_xxs"]
BF16_CODECS = ["bf16-huffman", "bf16-unary", "bf16-mx", "bf16-spec"]


def assert_same(actual, expected, where):
    assert actual.shape == expected.shape, where
    assert np.array_equal(bits(actual), bits(expected)), where


def test_model_roundtrip_bit_exact(bolt_model):
    ref = read_safetensors(SAFETENSORS)
    with boltpack.safe_open(bolt_model, framework="np") as f:
        assert f.keys() == sorted(ref)
        for name, (dtype, expected) in ref.items():
            got = f.get_tensor(name)
            assert_same(got, expected, name)
            assert f.get_slice(name).get_dtype() == dtype
            assert f.get_slice(name).get_shape() == list(expected.shape)


@pytest.mark.parametrize("codec", F32_CODECS + BF16_CODECS)
def test_every_codec_matches_cli_decode(cli, work, bf16_model, codec):
    source = bf16_model if codec in BF16_CODECS else SAFETENSORS
    if codec == "iq2_xxs":  # rows of whole 256-element super-blocks: wider than the model's
        source = work / "wide.safetensors"
        rng = np.random.default_rng(3)
        boltpack.save_file({"w": rng.standard_normal((16, 512), dtype=np.float32) * 0.02}, source)
    packed = work / f"codec-{codec}.bolt"
    cli("convert", source, "-o", packed, "--codec", f"*={codec}")
    decoded = work / f"codec-{codec}.safetensors"
    cli("convert", packed, "-o", decoded)
    ref = read_safetensors(decoded)
    seen = set()
    with boltpack.safe_open(packed) as f:
        for name in f.keys():
            seen.add(f.info(name)["codec"])
            assert_same(f.get_tensor(name), ref[name][1], f"{codec}: {name}")
    assert codec in seen, f"no tensor took {codec}: {seen}"


def test_lossy_codec_error_is_bounded(cli, work):
    """q8_0 of the model: relative RMS error per tensor under 1%."""
    packed = work / "codec-q8_0.bolt"
    cli("convert", SAFETENSORS, "-o", packed, "--codec", "*=q8_0")
    ref = read_safetensors(SAFETENSORS)
    with boltpack.safe_open(packed) as f:
        for name in f.keys():
            if f.info(name)["codec"] != "q8_0":
                continue
            x = ref[name][1].astype(np.float64)
            y = f.get_tensor(name).astype(np.float64)
            err = np.sqrt(np.mean((x - y) ** 2)) / max(np.sqrt(np.mean(x ** 2)), 1e-30)
            assert err < 0.01, (name, err)


def test_draft_view_matches_cli(cli, work, bf16_model):
    packed = work / "spec.bolt"
    cli("convert", bf16_model, "-o", packed, "--codec", "*=bf16-spec:keep=0.5,mbits=3")
    draft = work / "spec-draft.safetensors"
    cli("convert", packed, "-o", draft, "--view", "draft")
    ref_draft = read_safetensors(draft)
    ref_full = read_safetensors(bf16_model)
    with boltpack.safe_open(packed, view="draft") as f:
        assert "draft" in f.views()
        for name in f.keys():
            assert_same(f.get_tensor(name), ref_draft[name][1], f"draft: {name}")
    with boltpack.safe_open(packed) as f:
        differs = 0
        for name in f.keys():
            assert_same(f.get_tensor(name), ref_full[name][1], f"full: {name}")
            differs += not np.array_equal(ref_draft[name][1], ref_full[name][1])
        assert differs > 0, "the draft view should differ from the full one"


@pytest.fixture(scope="module")
def elastic_model(cli, work):
    path = work / "elastic.bolt"
    cli("convert", GGUF_F16, "-o", path, "--elastic", ELASTIC_JSON)
    return path


@pytest.mark.parametrize("budget", ["ffn75", "ffn50"])
def test_budget_matches_cli_slice(cli, work, elastic_model, budget):
    sliced = work / f"elastic-{budget}.safetensors"
    cli("slice", elastic_model, "--budget", budget, "-o", sliced)
    ref = read_safetensors(sliced)
    with boltpack.safe_open(elastic_model, budget=budget) as f:
        assert budget in f.budgets()
        assert f.keys() == sorted(ref)
        cut = 0
        for name in f.keys():
            got = f.get_tensor(name)
            assert_same(got, ref[name][1], f"{budget}: {name}")
            assert f.get_slice(name).get_shape() == list(ref[name][1].shape)
            assert_same(f.get_slice(name)[:2], ref[name][1][:2], f"{budget} slice: {name}")
        with boltpack.safe_open(elastic_model) as whole:
            for name in f.keys():
                cut += whole.get_slice(name).get_shape() != f.get_slice(name).get_shape()
        assert cut > 0, "a budget cuts some tensor"


INDEXES = [
    np.s_[:],
    np.s_[3:17],
    np.s_[-5:],
    np.s_[::3],
    np.s_[10:2:-2],
    np.s_[4],
    np.s_[-1],
    np.s_[2:9, 5:40],
    np.s_[:, 7],
    np.s_[:, -16:],
    np.s_[1:6, ::5],
    np.s_[..., 3:5],
    np.s_[5:5, :],
    np.s_[100:200, 1:3],
]


@pytest.mark.parametrize("path", [SAFETENSORS, GGUF_F16, GGUF_Q8, "bolt"], ids=["st", "gguf-f16", "gguf-q8", "bolt"])
def test_get_slice_equals_numpy_slicing(bolt_model, path):
    path = bolt_model if path == "bolt" else path
    with boltpack.safe_open(path) as f:
        for name in f.keys():
            full = f.get_tensor(name)
            if full.ndim == 0:
                continue
            s = f.get_slice(name)
            for index in INDEXES:
                if full.ndim == 1 and isinstance(index, tuple) and len(index) > 1 and index[0] is not Ellipsis:
                    continue
                try:
                    expected = full[index]
                except IndexError:
                    with pytest.raises(IndexError):
                        s[index]
                    continue
                assert_same(s[index], expected, f"{path.name}: {name}[{index}]")


def test_slices_of_3d_experts():
    with boltpack.safe_open(GGUF_EXPERTS) as f:
        names = [n for n in f.keys() if len(f.get_slice(n).get_shape()) == 3]
        assert names, "the experts file has 3-D tensors"
        for name in names:
            full = f.get_tensor(name)
            for index in [np.s_[1], np.s_[0:2, :, 3:9], np.s_[:, 1, :], np.s_[-1, ::2, ::-3]]:
                assert_same(f.get_slice(name)[index], full[index], f"{name}[{index}]")


def test_gguf_and_safetensors_open_like_bolt(bolt_model):
    ref = read_safetensors(SAFETENSORS)
    with boltpack.safe_open(SAFETENSORS) as st, boltpack.safe_open(bolt_model) as b:
        assert st.keys() == b.keys()
        for name in st.keys():
            assert_same(st.get_tensor(name), b.get_tensor(name), name)
            assert_same(st.get_tensor(name), ref[name][1], name)
    with boltpack.safe_open(GGUF_Q8) as q8:
        stored = [q8.get_stored(n) for n in q8.keys()]
        q8_tensors = [s for s in stored if s.codec == "q8_0"]
        assert q8_tensors
        s = q8_tensors[0]
        n = int(np.prod(s.shape))
        assert s.params == {"ggml_type": 8} or s.params == {}
        assert len(s.streams) == 1 and s.streams[0].data.size == n // 32 * 34
        assert not s.streams[0].data.flags.writeable


def test_metadata_is_typed():
    with boltpack.safe_open(GGUF_F16) as f:
        meta = f.metadata()
    assert isinstance(meta["general.architecture"], str)
    ints = [k for k, v in meta.items() if isinstance(v, int) and not isinstance(v, bool)]
    lists = [k for k, v in meta.items() if isinstance(v, list)]
    assert ints and lists
    assert all(isinstance(t, str) for t in meta["tokenizer.ggml.tokens"][:10])


def test_get_stored_params_of_nvfp4(cli, work):
    packed = work / "codec-nvfp4.bolt"
    cli("convert", SAFETENSORS, "-o", packed, "--codec", "*=nvfp4")
    with boltpack.safe_open(packed) as f:
        stored = [f.get_stored(n) for n in f.keys()]
    nv = [s for s in stored if s.codec == "nvfp4"]
    assert nv
    for s in nv:
        assert set(s.params) == {"tensor_scale"} and s.params["tensor_scale"] > 0
        assert [st.role for st in s.streams] and all(st.data.dtype == np.uint8 for st in s.streams)
