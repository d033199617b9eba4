#!/bin/bash
# The GPU checks of issue 17, run on a GPU machine from the repository root:
#   bash tools/gpu_check.sh            (logs under $OUT, or /tmp/gpu_out)
# The GPU tests first (training and devices, then every op), then a short timing probe.
set -u
export PYTHONPATH="src:." PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import sys, numpy, cupy; print(sys.version.split()[0], 'numpy', numpy.__version__, 'cupy', cupy.__version__)"
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
# pytest-xdist, where installed, spreads the tests over the machine's cores
XDIST=$(python3 -c "import xdist" 2>/dev/null && echo "-n ${JOBS:-8}")
timeout "${TRAIN_S:-240}" python3 -m pytest tests/gpu --ignore=tests/gpu/test_gpu_ops.py \
  tests/test_devices_static.py -q -p no:warnings -rfE --tb=short $XDIST > "$OUT/train.log" 2>&1
echo "gpu tests but ops, devices: $(tail -1 "$OUT/train.log")"
if [ -z "${SKIP_OPS:-}" ]; then
  timeout "${OPS_S:-200}" python3 -m pytest tests/gpu/test_gpu_ops.py -q -p no:warnings -rfE \
    --tb=line $XDIST > "$OUT/ops.log" 2>&1
  echo "ops: $(tail -1 "$OUT/ops.log")"
fi
if [ -n "${BENCH:-}" ]; then
  timeout "${BENCH_S:-200}" python3 -m bench --device cuda --out-dir "$OUT" $BENCH \
    > "$OUT/bench.log" 2>&1
  tail -25 "$OUT/bench.log"
fi
timeout "${PROBE_S:-90}" python3 tools/gpu_probe.py > "$OUT/probe.log" 2>&1
cat "$OUT/probe.log" | tail -20
grep -E "^(FAILED|ERROR)" "$OUT/train.log" | head -30
[ -f "$OUT/ops.log" ] && grep -E "^(FAILED|ERROR)" "$OUT/ops.log" | cut -c1-220 | head -40
