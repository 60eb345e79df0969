#!/usr/bin/env bash
# The tokenizer, metric and compiled-core exactness subset under every other Python that requires-python admits
# and that this machine has (docs/TOKENIZER.md names them): the pure-Python tokenizer's regexes
# once matched differently on an early 3.11 patch release. Each interpreter gets its own venv with
# a minimal install; an absent interpreter is skipped with a note.
set -euo pipefail
cd "$(dirname "$0")/.."
# The subset runs from a copy of the tree (tracked and untracked, ignored files left out), so this
# script can run beside the main suite: editable installs build the compiled cores in place, and
# Debian's 3.11 would otherwise rewrite the cpython-311 .so files the main suite has loaded.
export CAPEVAL_DATA="${CAPEVAL_DATA:-$(cd .. && pwd)/shared/data}"
copy_root="$(mktemp -d)"
trap 'rm -rf "$copy_root"' EXIT
copy="$copy_root/capeval"
mkdir -p "$copy"
git ls-files -z --cached --others --exclude-standard \
  | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$copy"
cd "$copy"
main_version="$(python3 -c 'import platform; print(platform.python_version())')"
subset=(tests/text tests/metrics/test_compiled_core.py tests/metrics/test_ngram_oracles.py
        tests/metrics/test_meteor_native.py tests/metrics/test_meteor_convert.py tests/stream/test_keys128.py)
# The compiled cores are optional at install (a failed build falls back to Python), so their
# tests would skip rather than fail: here a missing one is an error.
compiled="import capeval._speedups, capeval._meteor_speedups, capeval.metrics._meteor_native._paratable"
venvs="${CAPEVAL_CI_VENVS:-.ci-venvs}"
status=0
for py in /usr/bin/python3 "$HOME"/.pyenv/versions/3.11.7/bin/python "$HOME"/.pyenv/versions/3.12.1/bin/python \
          "$HOME"/.pyenv/versions/3.13.0/bin/python; do
  if [ ! -x "$py" ]; then
    echo "other-pythons: $py not present, skipped"
    continue
  fi
  version="$("$py" -c 'import platform; print(platform.python_version())')"
  if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "other-pythons: $py is $version, below requires-python, skipped"
    continue
  fi
  if [ "$version" = "$main_version" ]; then
    echo "other-pythons: Python $version is the main suite's interpreter, covered there"
    continue
  fi
  venv="$venvs/py$version"
  echo "other-pythons: Python $version ($py)"
  if ! { [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"; } \
     || ! "$venv/bin/pip" install -q -e . pytest hypothesis pycocoevalcap==1.2 >"$venv.pip.log" 2>&1; then
    # like the apt step: a machine that cannot install is reported, its tests are not run
    echo "warning: other-pythons: could not set up a venv for Python $version (see $venv.pip.log)"
    continue
  fi
  if ! "$venv/bin/python" -c "$compiled" 2>"$venv.compiled.log"; then
    echo "other-pythons: Python $version: a compiled core did not build"; cat "$venv.compiled.log"
    status=1
    continue
  fi
  # -p no:cacheprovider: the main suite's pytest cache is left alone.
  if "$venv/bin/python" -m pytest -q -p no:cacheprovider "${subset[@]}" >"$venv.pytest.log" 2>&1; then
    tail -n 1 "$venv.pytest.log"
  else
    cat "$venv.pytest.log"
    status=1
  fi
done
exit "$status"
