#!/usr/bin/env python3
"""Writes tests/golden/quant_blocks.json: blocks of GGUF tensors as llama.cpp's `llama-quantize`
stores them, with the float32 numbers they were quantized from, for tests/test_quant_formats.cpp
(the core's quantize_ref must give the same bytes).

The float32 files: a synthetic stories42M-shape model (uniform random weights) written by the
core itself (bench_cpu_roofline --save-model NAME.gguf) and, when given, SmolLM2-135M-Instruct
dequantized from its Q4_1 file (real weights on Q4_1's grid) by `llama-quantize
--allow-requantize FILE OUT F32` (the core saves only models it holds as float32). Each is quantized with
`llama-quantize --pure FILE OUT TYPE 1` (every 2-D tensor in TYPE, no importance matrix: llama.cpp's
reference quantizers, quantize_row_*_ref) for Q8_0, Q4_0, Q4_1, Q4_K, Q6_K, Q5_0 and Q5_1. From
each pair of files the script keeps, per type and source, two places of one tensor: the block
whose largest magnitude stands out most against its mean magnitude (the hard case for a scale),
and one at a fixed pseudo-random index. Standard library only; it is a tool of the repository, not part of the
product.

Usage: python3 scripts/golden/quant_blocks.py --core BUILD/bin --llama-bin DIR
           [--smollm2 SmolLM2-135M-Instruct.Q4_1.gguf] [--out tests/golden/quant_blocks.json]
"""
import argparse
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# ggml type id: (name, numbers per block, bytes per block)
TYPES = {0: ("F32", 1, 4), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
         7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 12: ("Q4_K", 256, 144),
         14: ("Q6_K", 256, 210)}
QUANTIZED = ["Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q6_K"]
# Types whose records follow all of QUANTIZED's (so those keep the blocks they were picked with).
LATER = ["Q5_0", "Q5_1"]
# Blocks per record: a few 32-blocks, one 256-super-block.
RECORD_BLOCKS = {"Q8_0": 4, "Q4_0": 4, "Q4_1": 4, "Q4_K": 1, "Q6_K": 1, "Q5_0": 4, "Q5_1": 4}


def read_gguf(path):
    """The tensors of a GGUF file: name -> (type id, element count, file offset of the data)."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 0

    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return vals[0] if len(vals) == 1 else vals

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n].decode("utf-8")
        pos += n
        return s

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
              12: "d"}

    def skip_value(vtype):
        nonlocal pos
        if vtype == 8:
            string()
        elif vtype == 9:
            etype, count = take("I"), take("Q")
            for _ in range(count):
                skip_value(etype)
        else:
            take(scalar[vtype])

    if data[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    pos = 4
    _version, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    alignment = 32
    for _ in range(n_kv):
        key = string()
        vtype = take("I")
        if key == "general.alignment":
            alignment = take("I")
        else:
            skip_value(vtype)
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        ttype, offset = take("I"), take("Q")
        count = 1
        for d in dims:
            count *= d
        infos.append((name, ttype, count, offset))
    base = (pos + alignment - 1) // alignment * alignment
    return data, {name: (t, n, base + off) for name, t, n, off in infos}


def blocks_of(gguf, tensor, first, count):
    data, tensors = gguf
    ttype, n, offset = tensors[tensor]
    _name, per_block, nbytes = TYPES[ttype]
    assert first + count <= n // per_block
    return data[offset + first * nbytes:offset + (first + count) * nbytes]


def pick_blocks(f32, tensor, per_block, record, seed):
    """Two places in the tensor: the most outlier-heavy block and a pseudo-random one."""
    data, tensors = f32
    _t, n, offset = tensors[tensor]
    floats = struct.unpack_from(f"<{n}f", data, offset)
    groups = n // (per_block * record)
    best, best_ratio = 0, -1.0
    for g in range(groups):
        xs = floats[g * per_block * record:(g + 1) * per_block * record]
        mean = sum(abs(x) for x in xs) / len(xs)
        ratio = max(abs(x) for x in xs) / mean if mean > 0 else 0.0
        if ratio > best_ratio:
            best, best_ratio = g, ratio
    other = random.Random(seed).randrange(groups)
    if other == best:
        other = (best + 1) % groups
    return [best * record, other * record]


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}\n{out.stderr}")
    return out.stdout + out.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--core", required=True, help="the build's bin/ (bench_cpu_roofline)")
    ap.add_argument("--llama-bin", required=True, help="llama.cpp's bin/ (llama-quantize)")
    ap.add_argument("--smollm2", help="SmolLM2-135M-Instruct.Q4_1.gguf (optional second source)")
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "golden", "quant_blocks.json"))
    args = ap.parse_args()

    quantize = os.path.join(args.llama_bin, "llama-quantize")
    core = os.path.join(args.core, "bench_cpu_roofline")
    # How each source's float32 file is written (to the path appended).
    sources = [("synthetic stories42M (seed 1234)",
                [core, "--synthetic", "stories42M", "--save-model"], "blk.0.attn_q.weight")]
    if args.smollm2:
        sources.append(("SmolLM2-135M-Instruct.Q4_1.gguf, dequantized",
                        [quantize, "--allow-requantize", args.smollm2, "F32"],
                        "blk.0.ffn_down.weight"))
    records, later, build = [], [], ""
    with tempfile.TemporaryDirectory() as tmp:
        for label, write_f32, tensor in sources:
            f32_path = os.path.join(tmp, "f32.gguf")
            run(write_f32[:-1] + [f32_path, write_f32[-1]] if write_f32[0] == quantize
                else write_f32 + [f32_path])
            f32 = read_gguf(f32_path)
            for type_name in QUANTIZED + LATER:
                out = records if type_name in QUANTIZED else later
                q_path = os.path.join(tmp, type_name + ".gguf")
                log = run([quantize, "--pure", f32_path, q_path, type_name, "1"])
                m = re.search(r"version: (\S+ \(build \d+, commit [0-9a-f]+\))", log, re.I)
                build = m.group(1) if m else build
                q = read_gguf(q_path)
                qtype = TYPES[q[1][tensor][0]][0]
                if qtype != type_name:
                    sys.exit(f"{tensor} came out as {qtype}, not {type_name}")
                per_block = next(v[1] for v in TYPES.values() if v[0] == type_name)
                record = RECORD_BLOCKS[type_name]
                seed = len(records) if out is records else 1000 + len(later)
                for first in pick_blocks(f32, tensor, per_block, record, seed=seed):
                    xs = blocks_of(f32, tensor, first * per_block, record * per_block)
                    out.append({
                        "type": type_name, "source": label, "tensor": tensor, "block": first,
                        "count": record, "f32": xs.hex(),
                        "bytes": blocks_of(q, tensor, first, record).hex()})
                os.remove(q_path)
            os.remove(f32_path)
    golden = {
        "what": "blocks of llama-quantize's output and the float32 numbers they were quantized "
                "from; f32 is little-endian float32, bytes the GGUF block bytes, both hex",
        "made_by": "scripts/golden/quant_blocks.py",
        "llama_cpp": f"llama-quantize --pure FILE OUT TYPE 1, version {build} (the llama.cpp "
                     "vendored in llama-cpp-python 0.3.36)",
        "blocks": records + later,
    }
    with open(args.out, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: {len(records) + len(later)} records")


if __name__ == "__main__":
    main()
