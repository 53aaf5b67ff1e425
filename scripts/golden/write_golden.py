#!/usr/bin/env python3
"""Writes the golden files the tests read, from the reference programs (called by
scripts/make_golden.sh, which downloads and builds them; not part of the build or the tests).

- stories260K_greedy.json: llama2.c's greedy runs of stories260K. The text is what the `run`
  binary printed; the ids come from llama2c_dump, whose printed text must equal run's.
- stories260K_logits.txt: llama2.c's logits at every position of one greedy run.
- llama2_tokenizer_encode.json: SentencePiece's ids for the Llama 2 tokenizer (BOS prepended);
  llama2.c's encode() must give the same ids.

Any disagreement between two references stops the script: nothing half-checked is written.
"""
import argparse
import json
import math
import pathlib
import subprocess
import sys

# The greedy cases: name, prompt, steps (positions forwarded, llama2.c's -n).
GREEDY_CASES = [
    ("once", "Once upon a time", 256),
    ("empty", "", 256),
    ("lily_tom", "Lily and Tom went to the", 200),
    ("cat", "The cat sat on the", 200),
    ("boy", "One day, a little boy named Tim found a", 150),
    ("short", "Hi", 64),
]
LOGITS_PROMPT, LOGITS_STEPS = "Once upon a time", 8

# Texts for the Llama 2 tokenizer: Meta's examples, edge cases of spaces, JSON, accents, CJK,
# emoji (byte fallback), control characters, digits, one character.
TOKENIZER_TEXTS = [
    "Hello world",
    "I believe the meaning of life is",
    "Simply put, the theory of relativity states that ",
    "A long time ago in a galaxy far, far away",
    "   leading spaces and trailing   ",
    '{"name": "Lily", "age": 3, "tags": ["a", "b"]}',
    "na\u00efve caf\u00e9 \u2014 d\u00e9j\u00e0 vu",
    "\u4f60\u597d\uff0c\u4e16\u754c",
    "emoji: \U0001f999\U0001f680",
    "tabs\tand\nnewlines",
    "1234567890 3.14159 -42",
    "x",
]


def run(cmd):
    """Runs cmd, returns its stdout as bytes; any failure stops the script."""
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if done.returncode != 0:
        sys.exit(f"error: {' '.join(map(str, cmd))} exited with {done.returncode}:\n"
                 f"{done.stderr.decode(errors='replace')}")
    return done.stdout


def ints(line):
    return [int(x) for x in line.split()]


def write_json(path, doc):
    # The layout of the files the tests were written against: one-space indent, UTF-8, no
    # trailing newline.
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False), encoding="utf-8")


def greedy_file(a, work):
    cases = []
    for name, prompt, steps in GREEDY_CASES:
        printed = run([a.run, a.model, "-z", a.tok512, "-t", "0", "-n", str(steps), "-i", prompt])
        ids_path = work / f"{name}.ids"
        replayed = run([a.dump, "greedy", a.model, a.tok512, str(steps), prompt, ids_path])
        if printed != replayed:
            sys.exit(f"error: case '{name}': llama2c_dump's loop printed another text than run.c "
                     "(a llama2.c version whose generate() differs from the one this script "
                     "mirrors?)")
        prompt_tokens, tokens = (ints(l) for l in ids_path.read_text().splitlines())
        # run.c ends its output with one newline of its own.
        text = printed.decode("utf-8")
        text = text[:-1] if text.endswith("\n") else text
        cases.append({"name": name, "prompt": prompt, "steps": steps, "temperature": 0.0,
                      "prompt_tokens": prompt_tokens, "tokens": tokens, "text": text})
        print(f"  greedy '{name}': {len(prompt_tokens)} prompt tokens, {len(tokens)} in all")
    write_json(a.out / "stories260K_greedy.json", {
        "model": "stories260K.bin",
        "tokenizer": "tok512.bin",
        "reference": f"karpathy/llama2.c run.c (commit {a.commit[:7]}), greedy (-t 0), -n steps; "
                     "tokens = full sequence starting with BOS (1) as run.c forwards it, stopping "
                     "when BOS (1) is sampled or pos reaches steps; text = what run.c prints "
                     "(decode() drops the leading space after BOS; safe_printf skips unprintable "
                     "single bytes)",
        "cases": cases,
    })


def logits_file(a, work):
    rows_path = work / "logits.rows"
    run([a.dump, "logits", a.model, a.tok512, str(LOGITS_STEPS), LOGITS_PROMPT, rows_path])
    rows = rows_path.read_text().splitlines()
    prompt_ids = ints(run([a.dump, "encode", a.tok512, "512", LOGITS_PROMPT]).decode())
    header = (f"# stories260K.bin logits from karpathy/llama2.c run.c forward(), prompt "
              f"'{LOGITS_PROMPT}' (tokens {' '.join(map(str, prompt_ids))}) then greedy; one row "
              "per position: pos token logit[0..511]")
    (a.out / "stories260K_logits.txt").write_text("\n".join([header] + rows) + "\n")
    print(f"  logits: {len(rows)} positions")


def tokenizer_file(a):
    try:
        import sentencepiece
    except ImportError:
        sys.exit("error: the Python module sentencepiece is missing (Debian: apt-get install "
                 "python3-sentencepiece, or pip install sentencepiece in a virtual environment)")
    sp = sentencepiece.SentencePieceProcessor(model_file=a.tokenizer_model)
    cases = []
    for text in TOKENIZER_TEXTS:
        ids = [1] + sp.encode(text)  # BOS prepended, no EOS: what the tests and run.c use
        theirs = ints(run([a.dump, "encode", a.tokenizer_bin, "32000", text]).decode())
        if ids != theirs:
            sys.exit(f"error: SentencePiece and llama2.c disagree on {text!r}:\n  {ids}\n  {theirs}")
        cases.append({"text": text, "ids": ids})
    write_json(a.out / "llama2_tokenizer_encode.json", {
        "tokenizer": "tokenizer.bin (Llama 2, 32000 pieces)",
        "reference": f"SentencePiece {sentencepiece.__version__} with tokenizer.model, BOS (1) "
                     "prepended, no EOS; karpathy/llama2.c run.c encode() gives the same ids for "
                     "every case",
        "cases": cases,
    })
    print(f"  tokenizer: {len(cases)} texts, SentencePiece and llama2.c agree")


def compare(out, other):
    """Compares the files just written with another golden folder: JSON data equal (the
    'reference' notes aside), logits within 1e-5 absolute. Returns the number of differences."""
    bad = 0
    for name in ("stories260K_greedy.json", "llama2_tokenizer_encode.json"):
        mine = json.loads((out / name).read_text(encoding="utf-8"))
        theirs = json.loads((other / name).read_text(encoding="utf-8"))
        mine.pop("reference", None)
        theirs.pop("reference", None)
        same = mine == theirs
        bad += not same
        print(f"  {name}: {'same' if same else 'DIFFERENT'}")
    rows = [[l.split() for l in (d / "stories260K_logits.txt").read_text().splitlines()
             if not l.startswith("#")] for d in (out, other)]
    worst = math.inf if len(rows[0]) != len(rows[1]) else 0.0
    for r0, r1 in zip(*rows):
        if r0[:2] != r1[:2] or len(r0) != len(r1):
            worst = math.inf
            break
        worst = max([worst] + [abs(float(x) - float(y)) for x, y in zip(r0[2:], r1[2:])])
    bad += not worst <= 1e-5
    print(f"  stories260K_logits.txt: max |difference| {worst:.2e}")
    return bad


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", required=True, help="llama2.c's run binary")
    p.add_argument("--dump", required=True, help="the llama2c_dump binary")
    p.add_argument("--model", required=True, help="stories260K.bin")
    p.add_argument("--tok512", required=True, help="tok512.bin")
    p.add_argument("--tokenizer-bin", required=True, help="llama2.c's tokenizer.bin")
    p.add_argument("--tokenizer-model", required=True, help="llama2.c's tokenizer.model")
    p.add_argument("--commit", required=True, help="llama2.c commit the binaries come from")
    p.add_argument("--work", required=True, type=pathlib.Path, help="scratch folder")
    p.add_argument("--out", required=True, type=pathlib.Path, help="folder to write")
    p.add_argument("--compare", type=pathlib.Path, help="golden folder to compare with")
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    greedy_file(a, a.work)
    logits_file(a, a.work)
    tokenizer_file(a)
    if a.compare and compare(a.out, a.compare):
        sys.exit(f"error: the regenerated files differ from {a.compare}")


if __name__ == "__main__":
    main()
