#!/usr/bin/env python3
"""Writes llama.cpp's reference numbers for SmolLM2-135M-Instruct into tests/golden/ (read by
tests/test_smollm2_golden.cpp). Not part of the build or the tests; rerun it only to regenerate
the committed files.

    python3 scripts/golden/smollm2_golden.py MODELS_DIR [--out DIR] [--work DIR] [--threads N]

(about two minutes on one thread, most of it llama.cpp's log of the F32 conversion)

MODELS_DIR holds SmolLM2-135M-Instruct.Q4_1.gguf (its SHA-256 is checked). It needs the Python
binding of llama.cpp, llama-cpp-python, built for the CPU. On a CPU with AMX (Sapphire Rapids and
later) llama.cpp's AMX matmul segfaults on the first decode when built with GGML_NATIVE, so build
it with AMX off, the choice these files were made with:

    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF \\
      -DGGML_AMX_BF16=OFF" pip install llama-cpp-python==0.3.36

What it writes, for the cases below (raw prompts, and chat conversations rendered as ChatML and
tokenized by llama.cpp with special tokens parsed and no BOS, as add_bos_token is false):
- smollm2_f32.json: llama.cpp on an F32 GGUF of the same weights (llama_model_quantize with
  ftype ALL_F32 and allow_requantize dequantizes every tensor of the Q4_1 file), F32 KV cache,
  flash attention off: the exact reference of a float forward pass.
- smollm2_q4_1.json: llama.cpp on the Q4_1 file itself (F32 KV cache, flash attention off), where
  the quantized dot products round the activations to 8 bits.
Each case records the prompt ids, STEPS greedy tokens (argmax, end-of-generation tokens included:
the run never stops early), the top-two logit gap at each step, the TOP_K highest logits (ids and
values) at every position, and at ROW_STEPS a row of logits: every SAMPLE_STRIDE-th vocabulary
entry (an even sample of the row: its mean |difference| estimates the whole row's) plus the
ROW_TOP highest. Full rows (49,152 floats each) would make the files megabytes.
"""
import argparse
import hashlib
import json
import pathlib
import sys

import numpy as np

import llama_cpp

MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
LLAMA_CPP_COMMIT = "0c1e57098"  # the llama.cpp vendored by llama-cpp-python 0.3.36

STEPS = 48  # greedy tokens per case
TOP_K = 4  # highest logits recorded at every position
ROW_STEPS = tuple(range(0, STEPS, 6)) + (STEPS - 1,)  # steps whose logits row is recorded
SAMPLE_STRIDE = 389  # a row holds logits[0], logits[389], logits[778], ... (127 values)
ROW_TOP = 32  # ... and its 32 highest logits
DECIMALS = 5  # logits and gaps are rounded to 1e-5, well under the tests' 1e-3

SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

# name, kind, and the prompt text ("raw") or the conversation ("chat", list of (role, text)).
CASES = [
    ("raw_gravity", "raw", "Gravity is the force that"),
    ("raw_recipe", "raw", "Here is a simple recipe for pancakes:\n1."),
    ("chat_capital", "chat", [("system", SMOLLM2_SYSTEM),
                              ("user", "What is the capital of France? Tell me about it.")]),
    ("chat_two_turns", "chat", [("system", "You are a concise assistant."),
                                ("user", "Name a fruit."),
                                ("assistant", "An apple."),
                                ("user", "Write a short poem about it.")]),
]


def render_chatml(messages):
    """SmolLM2's chat template (ChatML) for a conversation, with the generation prompt."""
    text = "".join(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in messages)
    return text + "<|im_start|>assistant\n"


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def dequantize_to_f32(src, dst, threads):
    """Writes an F32 GGUF of @p src's weights (every quantized tensor dequantized)."""
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_ALL_F32
    params.allow_requantize = True
    params.nthread = threads
    if llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), params) != 0:
        sys.exit(f"error: llama_model_quantize could not write {dst}")


def top_two_gap(row):
    two = np.partition(row, -2)[-2:]
    return float(two[1] - two[0])


def highest(row, k):
    """Ids and values of the k highest entries of row, highest first."""
    ids = np.argpartition(row, -k)[-k:]
    ids = ids[np.argsort(-row[ids], kind="stable")]
    return [int(i) for i in ids], [round(float(row[i]), DECIMALS) for i in ids]


def run_case(llm, prompt_ids):
    """Prompt in one batch, then STEPS greedy tokens one at a time; every position's logits."""
    llm.reset()
    llm.eval(prompt_ids)
    generated = []
    for step in range(STEPS):
        row = llm.scores[llm.n_tokens - 1]
        generated.append(int(np.argmax(row)))
        if step + 1 < STEPS:  # the last token's logits are not needed
            llm.eval([generated[-1]])
    return generated, np.array(llm.scores[:llm.n_tokens], dtype=np.float32)


def record(llm, name, kind, content):
    if kind == "raw":
        text, case = content, {"name": name, "kind": kind, "prompt": content}
    else:
        text = render_chatml(content)
        case = {"name": name, "kind": kind,
                "messages": [{"role": r, "content": c} for r, c in content], "rendered": text}
    prompt_ids = llm.tokenize(text.encode(), add_bos=False, special=kind == "chat")
    generated, logits = run_case(llm, prompt_ids)
    first = len(prompt_ids) - 1  # the position whose logits choose generated[0]
    tops = [highest(row, TOP_K) for row in logits]
    rows = []
    for step in ROW_STEPS:
        row = logits[first + step]
        top_ids, top_logits = highest(row, ROW_TOP)
        rows.append({"pos": first + step,
                     "sample": [round(float(v), DECIMALS) for v in row[::SAMPLE_STRIDE]],
                     "top_ids": top_ids, "top_logits": top_logits})
    case.update({
        "prompt_ids": prompt_ids,
        "generated_ids": generated,
        "gaps": [round(top_two_gap(logits[first + s]), DECIMALS) for s in range(STEPS)],
        "top_ids": [t[0] for t in tops],
        "top_logits": [t[1] for t in tops],
        "rows": rows,
        "text": llm.detokenize(generated, special=True).decode(errors="replace"),
    })
    return case


def golden_file(model_path, weights, threads):
    llm = llama_cpp.Llama(model_path=str(model_path), n_ctx=256, n_batch=256, n_ubatch=256,
                          n_threads=threads, n_threads_batch=threads, logits_all=True,
                          flash_attn=False, type_k=llama_cpp.GGML_TYPE_F32,
                          type_v=llama_cpp.GGML_TYPE_F32, verbose=False)
    vocab = llm.n_vocab()
    cases = [record(llm, *c) for c in CASES]
    return {
        "about": "llama.cpp's greedy runs of SmolLM2-135M-Instruct; written by "
                 "scripts/golden/smollm2_golden.py, see tests/golden/README.md",
        "model": MODEL_NAME,
        "model_sha256": MODEL_SHA256,
        "weights": weights,
        "kv_cache": "f32",
        "llama_cpp_python": llama_cpp.__version__,
        "llama_cpp_commit": LLAMA_CPP_COMMIT,
        "build": "GGML_NATIVE=OFF GGML_AVX2=ON GGML_AMX_TILE/INT8/BF16=OFF",
        "vocab_size": vocab,
        "steps": STEPS,
        "sample_stride": SAMPLE_STRIDE,
        "cases": cases,
    }


def write_json(path, data):
    """One case field per line: the files stay small and their diffs readable."""
    with open(path, "w") as f:
        f.write("{\n")
        head = [k for k in data if k != "cases"]
        for k in head:
            f.write(f"  {json.dumps(k)}: {json.dumps(data[k])},\n")
        f.write('  "cases": [\n')
        for i, case in enumerate(data["cases"]):
            fields = [f"    {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"
                      for k, v in case.items()]
            f.write("   {\n" + ",\n".join(fields) + "\n   }")
            f.write(",\n" if i + 1 < len(data["cases"]) else "\n")
        f.write("  ]\n}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", type=pathlib.Path, help=f"folder holding {MODEL_NAME}")
    root = pathlib.Path(__file__).resolve().parents[2]
    ap.add_argument("--out", type=pathlib.Path, default=root / "tests" / "golden")
    ap.add_argument("--work", type=pathlib.Path, default=pathlib.Path("/tmp/smollm2-golden"),
                    help="where the F32 GGUF (540 MB) is written")
    # One thread by default (the committed files were made so): on a busy machine ggml's
    # spinning barriers make two threads many times slower.
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    model = args.models / MODEL_NAME
    if not model.is_file():
        sys.exit(f"error: {model} not found")
    if sha256(model) != MODEL_SHA256:
        sys.exit(f"error: {model} is not the expected file (SHA-256 differs)")
    if llama_cpp.__version__ != "0.3.36":
        print(f"warning: llama-cpp-python {llama_cpp.__version__}, the files were made with "
              f"0.3.36 (llama.cpp {LLAMA_CPP_COMMIT}): update LLAMA_CPP_COMMIT", file=sys.stderr)
    args.work.mkdir(parents=True, exist_ok=True)
    f32_model = args.work / "SmolLM2-135M-Instruct.F32.gguf"
    dequantize_to_f32(model, f32_model, args.threads)
    runs = [(f32_model, "f32: llama_model_quantize ALL_F32 (allow_requantize) of the Q4_1 file",
             "smollm2_f32.json"),
            (model, "q4_1: the file as published (Q4_1 linears, Q8_0 embedding)",
             "smollm2_q4_1.json")]
    for path, weights, name in runs:
        data = golden_file(path, weights, args.threads)
        write_json(args.out / name, data)
        for c in data["cases"]:
            print(f"{name} {c['name']}: {len(c['prompt_ids'])} prompt ids, min gap "
                  f"{min(c['gaps']):.5f}; {c['text'][:60]!r}")


if __name__ == "__main__":
    main()
