#!/usr/bin/env bash
# Time the README's build-time rows on a fresh clone of this checkout's HEAD (Build times).
#
#   bash benchmarks/build_times.sh [log file]   # default: bld/benchmarks/build_times.log
#
# Each row runs `uv run pytask` with its own JAX compilation cache (empty for the cold rows),
# so the machine's ~/.cache/project/jax is neither used nor touched. Nothing else should run.
set -u
ROOT=$(git rev-parse --show-toplevel)
LOG=$(realpath -m "${1:-$ROOT/bld/benchmarks/build_times.log}")
mkdir -p "$(dirname "$LOG")"
WORK=$(mktemp -d)
CLONE=$WORK/clone
git clone -q "$ROOT" "$CLONE"
cd "$CLONE" || exit 1
CACHE=$WORK/jax-cache
SMOKE_CACHE=$WORK/jax-cache-smoke
mkdir -p "$CACHE" "$SMOKE_CACHE"
echo "commit $(git rev-parse HEAD), $(date -u +%FT%TZ), clone $CLONE" > "$LOG"

row() {
  local label="$1"
  shift
  local started ended
  started=$(date +%s.%N)
  "$@" > "$WORK/last.out" 2>&1
  local status=$?
  ended=$(date +%s.%N)
  printf '%s: exit %s, %.1f s\n' "$label" "$status" "$(echo "$ended - $started" | bc)" >> "$LOG"
}

full() { env JAX_COMPILATION_CACHE_DIR="$CACHE" uv run pytask "$@"; }
smoke() { env PROJECT_PROFILE=smoke JAX_COMPILATION_CACHE_DIR="$SMOKE_CACHE" uv run pytask; }

row "fresh clone, empty compilation cache (creates .venv)" full
rm -rf bld
row "after rm -rf bld, cache warm" full
row "no-op" full
row "no-op again" full
python3 - <<'PY'
from pathlib import Path
tasks = Path("tasks.py")
anchor = '    """Compare retirement, consumption and wealth profiles across variants, by type."""\n'
text = tasks.read_text()
assert anchor in text, "task_plot_variant_comparison's docstring moved: update build_times.sh"
tasks.write_text(text.replace(anchor, anchor + '    _ = "edited for timing"\n'))
PY
row "a line of task_plot_variant_comparison edited in tasks.py" full
echo "# edited for timing" >> src/project/analysis/figures.py
row "src/project/analysis/figures.py edited" full
git checkout -q tasks.py src/project/analysis/figures.py
full > /dev/null 2>&1
row "smoke, empty compilation cache" smoke
rm -rf bld/smoke
row "smoke, clean bld/smoke, cache warm" smoke
row "smoke no-op" smoke
row "full no-op after the smoke build" full
echo "done" >> "$LOG"
cat "$LOG"
