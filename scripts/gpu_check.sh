#!/usr/bin/env bash
# GPU check for jaxtopics: device info, the test suite, and the LDA throughput benchmark on a
# 100M-token synthetic corpus (K=100 and K=1024, jaxtopics only unless tomotopy is installed and
# GPU_CHECK_TOMOTOPY=1). Sized to finish in under 10 minutes on one GPU (run it with timeout_s=600).
#
#   bash scripts/gpu_check.sh                     # on the GPU machine
#   GPU_CHECK_SMALL=1 bash scripts/gpu_check.sh   # tiny sizes: dry run of the logic on a CPU
#
# Environment:
#   OUT                  folder for the logs and the benchmark JSON (created; optional)
#   PYTHON               interpreter (default: python)
#   GPU_CHECK_SMALL=1    tiny benchmark sizes, runs without a GPU
#   GPU_CHECK_SKIP_TESTS=1   skip pytest
#   GPU_CHECK_TOMOTOPY=1 also time tomotopy (CPU) in the benchmark (slow at 100M tokens)
#   TEST_TIMEOUT, BENCH_TIMEOUT, CHILD_TIMEOUT   seconds (defaults 300, 270, 150: < 10 min in all)
#   BENCH_ARGS           replaces the benchmark size arguments
#   GPU_CHECK_DATA       folder holding gsdmm/News-T.jsonl for the short-text benchmark (default
#                        ../shared/data, which does not travel to a device machine: copy it into
#                        an ignored, carried folder of the checkout and point here)
#   SHORT_TIMEOUT        seconds for the short-text benchmark (default 150)
#   PTM_TIMEOUT          seconds for the PTM benchmark (default 120)
#   HDP_TIMEOUT, SCALING_TIMEOUT   seconds for the HDP speed and LDA scaling stages (240, 150)
#   PYTEST_ARGS          what pytest runs (default: tests, the whole suite)
#   GPU_CHECK_STAGES     comma-separated stages to run (default all: nvidia_smi, jax_info, pytest,
#                        bench_lda, bench_short_text, bench_ptm, bench_hdp, bench_scaling); the
#                        stage timeouts add up to more than 10 minutes, so pick within a budget
# Exit status: 0 if every stage passed, else 1 (all stages run regardless).

set -u -o pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
REPO=$(pwd)
PY=${PYTHON:-python}
SMALL=${GPU_CHECK_SMALL:-0}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-270}
CHILD_TIMEOUT=${CHILD_TIMEOUT:-150}
LOG_DIR=${OUT:-}
export PYTHONUNBUFFERED=1

if [ -n "$LOG_DIR" ]; then
    mkdir -p "$LOG_DIR" || { echo "cannot create OUT=$LOG_DIR" >&2; exit 1; }
fi

T_START=$(date +%s)
FAILED=()
SUMMARY=()

header() {
    echo
    echo "=================================================================="
    echo "== $*   [$(date '+%H:%M:%S'), +$(( $(date +%s) - T_START )) s]"
    echo "=================================================================="
}

selected() { [ -z "${GPU_CHECK_STAGES:-}" ] || [[ ",$GPU_CHECK_STAGES," == *",$1,"* ]]; }

# run_stage NAME CMD...: run CMD, tee its output into $OUT/NAME.log when OUT is set, record
# the exit status and the elapsed time.
run_stage() {
    local name=$1; shift
    local t0 rc
    if ! selected "$name"; then
        SUMMARY+=("$name: not selected")
        return 0
    fi
    t0=$(date +%s)
    local shown
    shown=$(printf '%s ' "$@" | tr '\n' ' ' | cut -c1-150)
    header "$name: $shown"
    if [ -n "$LOG_DIR" ]; then
        "$@" 2>&1 | tee "$LOG_DIR/$name.log"
        rc=${PIPESTATUS[0]}
    else
        "$@" 2>&1
        rc=$?
    fi
    local dt=$(( $(date +%s) - t0 ))
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "!! $name: TIMED OUT (exit $rc) after ${dt} s"
        FAILED+=("$name")
        SUMMARY+=("$name: TIMEOUT after ${dt} s")
    elif [ "$rc" -ne 0 ]; then
        echo "!! $name: FAILED (exit $rc) after ${dt} s"
        FAILED+=("$name")
        SUMMARY+=("$name: FAILED (exit $rc) in ${dt} s")
    else
        SUMMARY+=("$name: ok in ${dt} s")
    fi
    return 0
}

header "jaxtopics GPU check on $(hostname) (repo $REPO, small=$SMALL, OUT=${LOG_DIR:-unset})"

# ---- 1. hardware --------------------------------------------------------------------------
if command -v nvidia-smi >/dev/null 2>&1; then
    run_stage nvidia_smi nvidia-smi
else
    header "nvidia_smi"
    echo "nvidia-smi not found"
    SUMMARY+=("nvidia_smi: not found")
fi

# ---- 2. jax and its devices ---------------------------------------------------------------
run_stage jax_info "$PY" -c '
import sys, jax, jaxlib
print("python", sys.version.split()[0], "| jax", jax.__version__, "| jaxlib", jaxlib.__version__)
print("default backend:", jax.default_backend())
for d in jax.devices():
    print(" ", d, "|", getattr(d, "device_kind", "?"))
    try:
        s = d.memory_stats() or {}
        if "bytes_limit" in s:
            print("    memory limit %.1f GiB" % (s["bytes_limit"] / 2**30))
    except Exception as e:
        print("    memory_stats unavailable:", e)
try:
    import tomotopy
    print("tomotopy", tomotopy.__version__)
except ImportError:
    print("tomotopy not installed")
'
BACKEND=$("$PY" -c 'import jax; print(jax.default_backend())' 2>/dev/null || echo "unknown")
echo "backend: $BACKEND"

# ---- 3. tests -------------------------------------------------------------------------------
if [ "${GPU_CHECK_SKIP_TESTS:-0}" = "1" ]; then
    header "pytest: skipped (GPU_CHECK_SKIP_TESTS=1)"
    SUMMARY+=("pytest: skipped")
else
    # shellcheck disable=SC2086  # PYTEST_ARGS is a word list on purpose
    run_stage pytest timeout -k 10 "$TEST_TIMEOUT" "$PY" -m pytest -q -x --durations=15 ${PYTEST_ARGS:-tests}
fi

# ---- 4. benchmark ---------------------------------------------------------------------------
if [ "$SMALL" = "1" ]; then
    DEFAULT_BENCH="--docs 300 --words 1000 --doc-length 50 --ks 10,20 --sweeps 2 --scaling half"
else
    # 500k docs x 200 tokens = 100M tokens. Host-side costs dominate the budget (corpus draw
    # ~40 s, lda.prepare's argsort ~25 s per engine), hence the scaling check against N/2.
    DEFAULT_BENCH="--docs 500000 --words 50000 --doc-length 200 --ks 100,1024 --sweeps 10 --scaling half --samplers parallel,parallel-mh"
fi
BENCH=${BENCH_ARGS:-$DEFAULT_BENCH}
TOMO_FLAG="--skip-tomotopy"
if [ "${GPU_CHECK_TOMOTOPY:-0}" = "1" ] || [ "$SMALL" = "1" ]; then
    TOMO_FLAG=""  # the bench skips tomotopy by itself when it is not installed
fi
JSON_FLAG=()
if [ -n "$LOG_DIR" ]; then
    JSON_FLAG=(--json "$LOG_DIR/bench_lda.json")
fi

if selected bench_lda && [ "$SMALL" != "1" ] && [ "$BACKEND" != "gpu" ] && [ "$BACKEND" != "cuda" ]; then
    header "bench_lda: SKIPPED"
    echo "!! jax backend is '$BACKEND', not gpu: the 100M-token benchmark would not finish on a CPU."
    echo "!! (GPU_CHECK_SMALL=1 runs it at tiny sizes)"
    FAILED+=("bench_lda")
    SUMMARY+=("bench_lda: skipped, no GPU")
else
    # shellcheck disable=SC2086  # BENCH and TOMO_FLAG are word lists on purpose
    run_stage bench_lda timeout -k 10 "$BENCH_TIMEOUT" "$PY" scripts/bench_lda.py $BENCH \
        $TOMO_FLAG --child-timeout "$CHILD_TIMEOUT" "${JSON_FLAG[@]}"
fi

# ---- 5. short-text clustering: DMM / DPMM, parallel vs sequential ---------------------------
SHORT_DATA=${GPU_CHECK_DATA:-$REPO/../shared/data}
SHORT_TIMEOUT=${SHORT_TIMEOUT:-150}
if [ "$SMALL" = "1" ]; then
    SHORT_ARGS=(--dataset tweet --warmup 1 --sweeps 2)
else
    SHORT_ARGS=(--dataset news-t --warmup 5 --sweeps 20)
fi
SHORT_JSON=()
if [ -n "$LOG_DIR" ]; then
    SHORT_JSON=(--json "$LOG_DIR/bench_short_text.json")
fi
if [ -f "$SHORT_DATA/gsdmm/News-T.jsonl" ]; then
    run_stage bench_short_text timeout -k 10 "$SHORT_TIMEOUT" "$PY" scripts/bench_short_text.py \
        "${SHORT_ARGS[@]}" --ptm "" --data "$SHORT_DATA" "${SHORT_JSON[@]}"
else
    header "bench_short_text: SKIPPED"
    echo "!! no $SHORT_DATA/gsdmm/News-T.jsonl (set GPU_CHECK_DATA)"
    SUMMARY+=("bench_short_text: skipped, no data")
fi

# ---- 6. PTM: parallel vs sequential on Tweet ------------------------------------------------
PTM_TIMEOUT=${PTM_TIMEOUT:-120}
if [ -f "$SHORT_DATA/gsdmm/Tweet.jsonl" ]; then
    PTM_SWEEPS=50
    [ "$SMALL" = "1" ] && PTM_SWEEPS=3
    run_stage bench_ptm timeout -k 10 "$PTM_TIMEOUT" "$PY" scripts/bench_ptm.py --datasets tweet \
        --engines jax-parallel --sweeps "$PTM_SWEEPS" --root "$SHORT_DATA"
else
    header "bench_ptm: SKIPPED"
    SUMMARY+=("bench_ptm: skipped, no data")
fi

# ---- 7. HDP: both kernels, speed part of bench_hdp (the issue-7 corpus) ----------------------
HDP_TIMEOUT=${HDP_TIMEOUT:-240}
HDP_ARGS=(--sweeps 20)
[ "$SMALL" = "1" ] && HDP_ARGS=(--sweeps 2 --docs 60 --words 200)
run_stage bench_hdp timeout -k 10 "$HDP_TIMEOUT" "$PY" scripts/bench_hdp.py --parts speed \
    "${HDP_ARGS[@]}" --skip-tomotopy

# ---- 7b. several seeds: vmapped (fit_chains) vs one after another ---------------------------
run_stage bench_chains timeout -k 10 "${CHAINS_TIMEOUT:-120}" "$PY" scripts/bench_chains.py

# ---- 8. LDA scaling: tokens/s and memory vs N and K -----------------------------------------
SCALING_TIMEOUT=${SCALING_TIMEOUT:-150}
if [ "$SMALL" = "1" ]; then
    SCALING_ARGS=(--ns 1e4,4e4 --ks 10,50 --base-n 1e4 --sweeps 1)
else
    SCALING_ARGS=(--ns 1e6,4e6,16e6 --ks 50,500,5000 --sweeps 3)
fi
SCALING_OUT=()
if [ -n "$LOG_DIR" ]; then
    SCALING_OUT=(--json "$LOG_DIR/bench_scaling.json" --png "$LOG_DIR/scaling_gpu.png")
fi
run_stage bench_scaling timeout -k 10 "$SCALING_TIMEOUT" "$PY" scripts/bench_scaling.py \
    "${SCALING_ARGS[@]}" "${SCALING_OUT[@]}"

# ---- summary --------------------------------------------------------------------------------
header "summary (total $(( $(date +%s) - T_START )) s)"
for line in "${SUMMARY[@]}"; do echo "  $line"; done
if [ -n "$LOG_DIR" ]; then
    printf '%s\n' "${SUMMARY[@]}" > "$LOG_DIR/summary.txt"
    echo "logs in $LOG_DIR"
fi
if [ "${#FAILED[@]}" -gt 0 ]; then
    echo "FAILED stages: ${FAILED[*]}"
    exit 1
fi
echo "all stages passed"
exit 0
