#!/usr/bin/env python3
"""Loads a model from a .bolt file with the boltpack module into Hugging Face
transformers and checks its logits against the original safetensors.

    python3 examples/python/load_into_transformers.py MODEL.bolt MODEL_DIR

MODEL_DIR holds config.json and model.safetensors (the shipped
testdata/tinystories-656k). The reference is transformers' own loader
(from_pretrained, which reads model.safetensors through safetensors); the
candidate is the same architecture built from config.json with its weights
from boltpack.load_file. Exits 0 when every logit is bit-identical (for a
lossless .bolt; a quantized one reports its error and exits 1).
"""

import argparse
import sys
import time

import torch
from transformers import AutoConfig, AutoModelForCausalLM

import boltpack


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bolt")
    ap.add_argument("model_dir")
    ap.add_argument("--tokens", type=int, default=64, help="prompt length (fixed token ids)")
    args = ap.parse_args()

    torch.manual_seed(0)
    reference = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.float32).eval()

    config = AutoConfig.from_pretrained(args.model_dir)
    candidate = AutoModelForCausalLM.from_config(config, dtype=torch.float32)  # random weights
    t0 = time.perf_counter()
    state = boltpack.load_file(args.bolt, framework="pt")
    t1 = time.perf_counter()
    # Tied embeddings: the file holds one of the two names (which one depends
    # on the writer); the other is the same tensor.
    if getattr(config, "tie_word_embeddings", False):
        pair = ("model.embed_tokens.weight", "lm_head.weight")
        for have, want in (pair, pair[::-1]):
            if have in state and want not in state:
                state[want] = state[have]
    missing, unexpected = candidate.load_state_dict(state, strict=False)
    if missing or unexpected:
        print(f"state dict mismatch: missing {missing}, unexpected {unexpected}", file=sys.stderr)
        return 1
    candidate.eval()

    ids = (torch.arange(args.tokens) * 37 + 11) % config.vocab_size
    ids = ids.unsqueeze(0)
    with torch.no_grad():
        ref_logits = reference(ids).logits
        got_logits = candidate(ids).logits
    identical = torch.equal(ref_logits, got_logits)
    max_abs = (ref_logits - got_logits).abs().max().item()
    print(f"{len(state)} tensors from {args.bolt} in {1e3 * (t1 - t0):.1f} ms; logits {tuple(got_logits.shape)}: "
          f"{'bit-identical' if identical else 'DIFFER'} to transformers' safetensors load (max |diff| {max_abs:.3g}); "
          f"argmax agrees on {(ref_logits.argmax(-1) == got_logits.argmax(-1)).float().mean().item():.1%} of positions")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
