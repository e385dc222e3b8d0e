# Sourced by scripts/demo and scripts/test: pick the interpreter, creating .venv on first use.
# PYTHON, when set (CI sets it to its own fresh venv), is used as it is.
if [[ -z "${PYTHON:-}" ]]; then
    if [[ ! -x .venv/bin/python ]]; then
        echo "Creating .venv and installing langgraph-compaction with its dev extras (first run only)"
        python3 -m venv .venv
        .venv/bin/python -m pip install --quiet --upgrade pip
        .venv/bin/python -m pip install --quiet -e ".[dev,postgres]"
    fi
    PYTHON=.venv/bin/python
fi
