#!/usr/bin/env python3
"""Writes tests/golden/smollm2_tokenizer.json: the token ids llama.cpp gives for a set of texts
with SmolLM2-135M-Instruct's own vocabulary (gpt2/smollm), as the independent reference of
tests/test_tokenizer_conformance.cpp.

Needs llama-cpp-python (built from the PyPI sdist, outside the repository, as
bench/compare_llamacpp.sh does); it is a tool of the repository, not part of the product.
Usage: python3 scripts/golden/smollm2_tokenizer.py MODEL.gguf [OUTPUT]
"""
import json
import os
import sys

import llama_cpp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Plain texts (special-token text stays text), then chat markup parsed as special tokens.
PLAIN = [
    "Hello world",
    " Hello world",
    "Once upon a time, there was a little robot.",
    "In 2024, 3.14159 and 1,000,000 are numbers.",
    "I'm sure you'll see they've done it.",
    "naïve café, Ελλάδα, 日本語, emoji 🦙🚀",
    "  leading and trailing spaces  ",
    "tabs\tand\nnewlines\n\n\nand\r\nCRLF",
    "def f(x):\n    return x**2  # square\n",
    '{"name": "SmolLM2", "size": 135, "tags": ["a", "b"]}',
    "<|im_start|>user\nnot parsed<|im_end|>",
    "",
    "   ",
]
SPECIAL = [
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
    "<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
    "<|im_start|>assistant\n",
]


def main():
    model = sys.argv[1]
    out_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "tests", "golden",
                                                                 "smollm2_tokenizer.json")
    llm = llama_cpp.Llama(model_path=model, vocab_only=True, verbose=False)
    cases = []
    for text, special in [(t, False) for t in PLAIN] + [(t, True) for t in SPECIAL]:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)
        cases.append({"text": text, "parse_special": special, "ids": ids})
    golden = {
        "provenance": f"scripts/golden/smollm2_tokenizer.py with llama-cpp-python "
                      f"{llama_cpp.__version__} on {os.path.basename(model)} "
                      "(add_bos=False; special as parse_special)",
        "cases": cases,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
