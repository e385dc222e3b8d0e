# Sourced by scripts/demo and scripts/test: pick the interpreter, creating .venv on first use.
# PYTHON, when set (CI sets it to its own fresh venv), is used as it is.
source "$(dirname "${BASH_SOURCE[0]}")/_local_model.sh"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ ! -x .venv/bin/python ]]; then
        install_started=$SECONDS
        echo "First run: creating .venv and installing langgraph-compaction with its dev, postgres,"
        echo "notebook and local extras (no compiler needed, and a 100 MB model: a minute or two, once)."
        if ! _install_phase "python3 -m venv .venv, and the newest pip" \
            bash -c 'python3 -m venv .venv && .venv/bin/python -m pip install --quiet --upgrade pip' ||
            ! install_project .venv/bin/python "dev,postgres,notebook,local"; then
            if [[ -f .venv/pip-install.log ]]; then # kept: the venv goes
                pip_log="$(mktemp "${TMPDIR:-/tmp}/compaction-pip-install.XXXXXX")"
                mv .venv/pip-install.log "$pip_log"
                echo "pip's whole output: $pip_log" >&2
            fi
            rm -rf .venv # half installed: the next run starts over instead of using it
            echo "The install failed (see above); fix the cause and run the script again." >&2
            exit 1
        fi
        echo "Installed in $(_elapsed "$install_started"); later runs start right away."
    fi
    PYTHON=.venv/bin/python
fi
