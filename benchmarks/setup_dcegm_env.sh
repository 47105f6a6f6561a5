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
PYTHON="${PYTHON:-python3}"
DCEGM_VERSION="0.1.3"

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
