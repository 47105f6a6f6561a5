#!/usr/bin/env bash
# The GPU checks of one lent accelerator session (all steps: at most 15 min; run a subset).
#
# Usage, on a machine with a GPU, JAX for CUDA and the project's other needs (or their wheels in
# .whl/, installed into /tmp/site first):
#
#   OUT=/some/folder bash benchmarks/gpu_check.sh
#
# Each step has its own time limit and writes its log (and JSON where the benchmark writes one)
# under $OUT; a failed or slow step does not stop the later ones. The steps:
#   1. the machine: nvidia-smi, Python, jax, jaxlib, the devices;
#   2. warm and first solves of the four benchmark sizes and IJRS 4000 x 20000 (compare_pylcm's
#      own child measurement, float64, T = 5; the peer pylcm 0.0.1 needs jax < 0.7, so it does
#      not run here) and the one-regime life-cycle model at 100 x 100 and 400 x 400 (float32);
#   3. the estimation objective: solve, one program, a batch, smooth moments and their Jacobian
#      (estimation_speed.py, one round); then the whole estimation (`estimate`; carry
#      bld/data/scf_moments.arrow);
#   4. the replication's moments and whole estimation (replication_speed.py --estimate, one
#      round, five warm evaluations);
#   5. DC-EGM against dcegm 0.1.3 (benchmarks/compare_dcegm.py, both on this GPU);
#   6. the solver's tests on the GPU (the large-block search path), 4 workers sharing the GPU
#      without preallocation (with it, 8 workers ran out of GPU memory on an H200).
# STEPS (default "machine solve estimation_speed estimate replication compare_dcegm tests") runs
# a subset.
set -uo pipefail

OUT="${OUT:?set OUT to the folder for the logs}"
PYTHON="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1 PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT"

STEPS="${STEPS:-machine solve estimation_speed estimate replication compare_dcegm tests}"

step() {  # step NAME SECONDS COMMAND...: run with a limit, log to $OUT/NAME.log
    local name="$1" limit="$2"
    shift 2
    [[ " $STEPS " == *" $name "* ]] || return 0
    local started=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "== $name: rc=$rc in $((SECONDS - started)) s"
    tail -n "${TAIL:-25}" "$OUT/$name.log"
}

step machine 60 bash -c "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; \
$PYTHON -c 'import sys, jax, jaxlib; print(sys.version); print(jax.__version__, jaxlib.__version__, jax.devices())'"

ours_sizes() {
    local config
    for config in \
        '{"model":"ijrs","n_wealth":100,"n_consumption":500,"n_periods":5,"first_level":"off","repeats":28}' \
        '{"model":"precautionary","n_wealth":100,"n_consumption":100,"n_periods":5,"first_level":"off","repeats":28}' \
        '{"model":"ijrs","n_wealth":500,"n_consumption":2000,"n_periods":5,"first_level":"off","repeats":14}' \
        '{"model":"precautionary","n_wealth":500,"n_consumption":500,"n_periods":5,"first_level":"off","repeats":14}' \
        '{"model":"ijrs","n_wealth":4000,"n_consumption":20000,"n_periods":5,"first_level":"off","repeats":5}'; do
        for round in 1 2; do
            echo "$config round $round"
            "$PYTHON" benchmarks/compare_pylcm.py --single "$config" | grep BENCHMARK_RESULT
        done
    done
    for n in 100 400; do
        for level in progress off; do
            echo "lifecycle $n x $n float32 $level"
            "$PYTHON" benchmarks/lifecycle_speedup.py --single \
                "{\"n\": $n, \"x64\": false, \"level\": \"$level\", \"repeats\": 7}" | grep BENCHMARK_RESULT
        done
    done
}
export -f ours_sizes
export PYTHON
TAIL=40 step solve 150 bash -c ours_sizes
step estimation_speed 240 "$PYTHON" benchmarks/estimation_speed.py --rounds 1 \
    --only solve,compiled,batch,smooth,gradient --json "$OUT/estimation_speed.json"
step estimate 240 "$PYTHON" benchmarks/estimation_speed.py --rounds 1 --estimate --only estimate \
    --json "$OUT/estimate.json"
step replication 240 "$PYTHON" benchmarks/replication_speed.py --rounds 1 --warm 5 --estimate \
    --json "$OUT/replication.json"
step compare_dcegm 200 "$PYTHON" benchmarks/compare_dcegm.py --rounds 1 --repeats 10 \
    --peer-python "$(command -v "$PYTHON")" --json "$OUT/compare_dcegm.json"
step tests 120 env XLA_PYTHON_CLIENT_PREALLOCATE=false "$PYTHON" -m pytest -q -p no:cacheprovider -n 4 tests/test_kernels.py \
    tests/test_choice.py tests/test_solve.py tests/test_structure.py
