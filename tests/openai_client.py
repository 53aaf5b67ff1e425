"""Chapter 10's server driven by the official OpenAI Python client (the reference client):
completions and chat, streaming and not, n, stop, logprobs, json_schema, errors. Starts
ch10_serving on a free 127.0.0.1 port with stories260K and stops it at the end (SIGTERM, exit 0).

Usage: python3 tests/openai_client.py BIN_DIR
Skips (exit 77) when the `openai` module or the model is missing, except under
INFERLAB_REQUIRE_MODELS=1 (CI), where that is a failure.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

SKIP = 77
STRICT = os.environ.get("INFERLAB_REQUIRE_MODELS") == "1"


def skip_or_fail(why):
    if STRICT:
        print(f"FAIL: {why} (INFERLAB_REQUIRE_MODELS=1)")
        sys.exit(1)
    print(f"SKIPPED: {why}")
    sys.exit(SKIP)


try:
    import openai
except ImportError:
    skip_or_fail("the openai module is not installed (pip install openai; .ci/run does)")

BIN = sys.argv[1]
MODEL = os.path.join(os.environ.get("INFERLAB_MODELS", "models"), "stories260K.bin")
if not os.path.exists(MODEL):
    skip_or_fail(f"{MODEL} not found (set INFERLAB_MODELS)")


def start_server():
    proc = subprocess.Popen(
        [os.path.join(BIN, "ch10_serving"), "--model", MODEL, "--threads", "1", "--port", "0",
         "--api-key", "sekret", "--model-name", "stories"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    port = None
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if m and port is None:
            port = int(m.group(1))
        if line.startswith("ready:"):
            return proc, port
    proc.kill()
    raise SystemExit("FAIL: the server did not get ready")


results = []


def case(name):
    def run(fn):
        try:
            fn()
            results.append((name, None))
            print(f"ok: {name}")
        except Exception as e:  # a failed assertion or an unexpected error alike
            results.append((name, e))
            print(f"FAIL: {name}: {type(e).__name__}: {e}")
        return fn
    return run


proc, port = start_server()
client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sekret",
                       max_retries=0, timeout=60)
try:
    @case("completion, not streamed")
    def _():
        r = client.completions.create(model="stories", prompt="Once upon a time",
                                      max_tokens=12, temperature=0)
        assert r.object == "text_completion"
        assert r.choices[0].text.startswith(", there was")
        assert r.choices[0].finish_reason in ("length", "stop")
        assert r.usage.prompt_tokens == 5 and r.usage.completion_tokens <= 12

    @case("completion, streamed: the same text and usage")
    def _():
        whole = client.completions.create(model="stories", prompt="Once upon a time",
                                          max_tokens=12, temperature=0)
        chunks = list(client.completions.create(
            model="stories", prompt="Once upon a time", max_tokens=12, temperature=0,
            stream=True, stream_options={"include_usage": True}))
        text = "".join(c.choices[0].text for c in chunks if c.choices)
        assert text == whole.choices[0].text, (text, whole.choices[0].text)
        assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens

    @case("chat, not streamed and streamed")
    def _():
        messages = [{"role": "system", "content": "You tell stories."},
                    {"role": "user", "content": "A story about a cat"}]
        whole = client.chat.completions.create(model="stories", messages=messages,
                                               max_tokens=16, temperature=0)
        assert whole.object == "chat.completion"
        assert whole.choices[0].message.role == "assistant"
        stream = client.chat.completions.create(model="stories", messages=messages,
                                                max_tokens=16, temperature=0, stream=True)
        chunks = list(stream)
        assert chunks[0].choices[0].delta.role == "assistant"
        text = "".join(c.choices[0].delta.content or "" for c in chunks)
        assert text == whole.choices[0].message.content
        assert chunks[-1].choices[0].finish_reason == whole.choices[0].finish_reason

    @case("n = 3 choices, each its own sample")
    def _():
        r = client.chat.completions.create(
            model="stories", messages=[{"role": "user", "content": "Hi"}], max_tokens=20,
            temperature=1.0, seed=5, n=3)
        assert sorted(c.index for c in r.choices) == [0, 1, 2]
        assert len({c.message.content for c in r.choices}) > 1
        assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens

    @case("stop: the text ends before the stop string, finish_reason stop")
    def _():
        r = client.completions.create(model="stories", prompt="Once upon a time",
                                      max_tokens=40, temperature=0, stop=["Lily", "\n"])
        assert r.choices[0].finish_reason == "stop"
        assert r.choices[0].text == ", there was a little girl named "

    @case("logprobs: one entry per token, the top alternatives sorted")
    def _():
        r = client.chat.completions.create(
            model="stories", messages=[{"role": "user", "content": "Hi"}], max_tokens=8,
            temperature=0, logprobs=True, top_logprobs=3)
        content = r.choices[0].logprobs.content
        assert len(content) == r.usage.completion_tokens
        for t in content:
            assert len(t.top_logprobs) == 3
            assert t.logprob <= 0
            assert t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob
            assert abs(t.logprob - t.top_logprobs[0].logprob) < 1e-5  # greedy
        c = client.completions.create(model="stories", prompt="Once", max_tokens=4,
                                      temperature=0, logprobs=2)
        assert len(c.choices[0].logprobs.tokens) == 4
        assert all(len(top) == 2 for top in c.choices[0].logprobs.top_logprobs)

    @case("json_schema: the answer parses and follows the schema")
    def _():
        schema = {"type": "object",
                  "properties": {"name": {"type": "string", "maxLength": 12},
                                 "age": {"type": "integer", "minimum": 1, "maximum": 99}},
                  "required": ["name", "age"], "additionalProperties": False}
        r = client.chat.completions.create(
            model="stories", messages=[{"role": "user", "content": "A character"}],
            max_tokens=200, temperature=0.7, seed=3,
            response_format={"type": "json_schema",
                             "json_schema": {"name": "character", "schema": schema}})
        assert r.choices[0].finish_reason == "stop", r.choices[0].finish_reason
        value = json.loads(r.choices[0].message.content)
        assert set(value) == {"name", "age"}
        # JSON Schema's "integer" is a value, not a spelling: 30.0 is one (chapter 08).
        age = value["age"]
        assert isinstance(age, (int, float)) and float(age).is_integer() and 1 <= age <= 99
        assert isinstance(value["name"], str) and len(value["name"]) <= 12

    @case("errors: 400 with the param, 401 without the key")
    def _():
        try:
            client.completions.create(model="stories", prompt="x", temperature=5)
            raise AssertionError("temperature 5 was accepted")
        except openai.BadRequestError as e:
            assert e.status_code == 400
            assert e.body["param"] == "temperature", e.body
            assert e.body["type"] == "invalid_request_error"
        try:
            client.chat.completions.create(model="stories", messages=[], max_tokens=2)
            raise AssertionError("no messages was accepted")
        except openai.BadRequestError as e:
            assert e.body["param"] == "messages"
        bad = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="wrong",
                            max_retries=0, timeout=30)
        try:
            bad.models.list()
            raise AssertionError("a wrong key was accepted")
        except openai.AuthenticationError as e:
            assert e.status_code == 401
        assert [m.id for m in client.models.list().data] == ["stories"]
finally:
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = "killed after 30 s"
    if code != 0:
        results.append(("SIGTERM exits 0", AssertionError(f"exit status {code}")))
        print(f"FAIL: SIGTERM exits 0: {code}")

failed = sum(1 for _, e in results if e is not None)
print(f"openai_client: {len(results) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
