#!/bin/sh
# The polos package (PyPI 0.1.3) in a venv of its own, for tests/metrics/test_polos.py's
# comparison with capeval's polos: sh scripts/make_polos_reference_venv.sh [DIR]
# (default /tmp/polos-ref-venv; the tests find it there or through CAPEVAL_POLOS_PYTHON).
#
# polos 0.1.3 declares Python <=3.10.0 and pins what it was built with (transformers 4.*,
# pytorch-lightning <=1.3, torchvision 0.16, fairseq, wandb...). Its scoring path needs fewer:
# it is installed without its dependencies, beside the versions of its poetry.lock where they
# still install (pytorch-lightning 1.2.10, torchmetrics 0.2.0, pytorch-nlp 0.5.0) and of
# today's torch. fairseq (its XLM-R encoder) is not installed; tests/metrics/_polos_reference.py
# says what stands in for it and for torchvision's compiled ops.
set -eu
DIR=${1:-/tmp/polos-ref-venv}
PY=${PYTHON:-python3.11}
"$PY" -m venv "$DIR"
PIP="$DIR/bin/pip"
"$PIP" install -q torch==2.13.0 torchvision==0.28.0 "numpy<2" "transformers==4.57.6" pyyaml "pandas<2" \
    ftfy regex click scipy pyDeprecate tensorboard
# pytorch-lightning 1.2 imports pkg_resources, which setuptools 70 and later no longer ship.
"$PIP" install -q "setuptools<70"
"$PIP" install -q --no-deps pytorch-lightning==1.2.10 torchmetrics==0.2.0 pytorch-nlp==0.5.0
"$PIP" install -q --no-deps --ignore-requires-python polos==0.1.3
"$DIR/bin/python" -c "import polos, pytorch_lightning, transformers; print('polos reference venv:', '$DIR')"
