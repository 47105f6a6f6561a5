#!/usr/bin/env bash
# Create a separate virtual environment holding the peer package `dcegm` (0.1.3).
#
# Usage: bash benchmarks/setup_dcegm_env.sh [ENV_DIR]   (default: /work/dcegm-env)
#
# dcegm is kept out of the project's own uv environment on purpose: it pins its own
# JAX stack and must not leak into our lock file. dcegm 0.1.3 imports pandas without
# declaring it, so pandas is installed by hand. The script is idempotent: it does
# nothing when ENV_DIR already imports dcegm.
set -euo pipefail

ENV_DIR="${1:-/work/dcegm-env}"
DCEGM_VERSION="0.1.3"

# The peer runs on what the package index serves today: jax 0.12 needs Python >= 3.12. On
# Python 3.11 pip resolves jax/jaxlib 0.10, whose CPU reductions run ~8x slow without the
# YNNPACK flag this project sets for itself: a slowed peer. So pick a Python >= 3.12.
if [[ -z "${PYTHON:-}" ]]; then
    for candidate in python3.13 python3.12 ~/.pyenv/versions/3.1[23]*/bin/python3 python3; do
        if command -v "${candidate}" >/dev/null 2>&1 \
            && "${candidate}" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            PYTHON="${candidate}"
            break
        fi
    done
fi
if [[ -z "${PYTHON:-}" ]] || ! "${PYTHON}" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    echo "dcegm's environment needs Python >= 3.12 (jax 0.12, as the package index serves it);" \
        "set PYTHON=/path/to/python3.12." >&2
    exit 2
fi

if [[ -x "${ENV_DIR}/bin/python" ]] \
    && "${ENV_DIR}/bin/python" -c "import dcegm" >/dev/null 2>&1; then
    echo "dcegm env already usable at ${ENV_DIR}; nothing to do."
    exit 0
fi

"${PYTHON}" -m venv "${ENV_DIR}"
"${ENV_DIR}/bin/python" -m pip install --quiet --upgrade pip
"${ENV_DIR}/bin/python" -m pip install --quiet "dcegm==${DCEGM_VERSION}" pandas

"${ENV_DIR}/bin/python" - <<'EOF'
import importlib.metadata as md

import dcegm  # noqa: F401  (import check)
import jax

print(f"dcegm {md.version('dcegm')}, jax {jax.__version__}: import OK")
EOF
