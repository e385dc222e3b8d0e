# Sourced by scripts/demo and scripts/test: pick the interpreter, creating .venv on first use.
# PYTHON, when set (CI sets it to its own fresh venv), is used as it is.
source "$(dirname "${BASH_SOURCE[0]}")/_local_model.sh"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ ! -x .venv/bin/python ]]; then
        echo "Creating .venv and installing langgraph-compaction with its dev, postgres, notebook"
        echo "and local extras (first run only; building llama-cpp-python takes several minutes)"
        python3 -m venv .venv
        .venv/bin/python -m pip install --quiet --upgrade pip
        install_project .venv/bin/python "dev,postgres,notebook,local"
    fi
    PYTHON=.venv/bin/python
fi
