#!/usr/bin/env bash
# Create a separate virtual environment holding the peer package HARK (econ-ark 0.17.2).
#
# Usage: bash benchmarks/setup_hark_env.sh [ENV_DIR]   (default: /work/hark-env)
#
# HARK is kept out of the project's own uv environment: it pins its own numpy/numba stack and
# must not leak into our lock file. econ-ark 0.17.2 imports sympy without declaring it, so sympy
# is installed by hand. Idempotent: nothing happens when ENV_DIR already imports HARK.
set -euo pipefail

ENV_DIR="${1:-/work/hark-env}"
HARK_VERSION="0.17.2"
PYTHON="${PYTHON:-python3}"

if [[ -x "${ENV_DIR}/bin/python" ]] && "${ENV_DIR}/bin/python" -c "import HARK" >/dev/null 2>&1; then
    echo "HARK env already usable at ${ENV_DIR}; nothing to do."
    exit 0
fi

"${PYTHON}" -m venv "${ENV_DIR}"
"${ENV_DIR}/bin/python" -m pip install --quiet --upgrade pip
"${ENV_DIR}/bin/python" -m pip install --quiet "econ-ark==${HARK_VERSION}" sympy

"${ENV_DIR}/bin/python" - <<'PY'
import importlib.metadata as md

import HARK  # noqa: F401  (import check)

print(f"econ-ark {md.version('econ-ark')}, numpy {md.version('numpy')}: import OK")
PY
