#!/usr/bin/env bash
# Issue [13]'s interoperability: a LeNet defined and scripted in PyTorch
# (examples/torchscript/export_lenet.py) trained by troupe with Downpour on
# two workers (--model=torchscript:lenet.pt) to the target test accuracy on
# Fashion-MNIST within EPOCHS epochs; the saved model then evaluated by
# troupe eval, which rebuilds it from lenet.pt, with the same accuracy, and
# its tensors are the module's state_dict (names after "0.", shapes).
# Needs a Python with PyTorch (Debian's python3-torch, /usr/bin/python3: the
# python3 first on the PATH may be another); skipped (77) without one.
#   torchscript_test.sh TROUPE [PYTHON] [TARGET] [EPOCHS]
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TROUPE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TARGET=${3:-0.88}
EPOCHS=${4:-6}
PY=
for py in ${2:-} /usr/bin/python3 python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import torch' 2>/dev/null; then
    PY=$py
    break
  fi
done
if [ -z "$PY" ]; then
  echo "SKIPPED: no python3 with torch (apt-get install python3-torch)" >&2
  exit 77
fi
work=$(mktemp -d /tmp/troupe-torchscript.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
"$PY" "$HERE/../../examples/torchscript/export_lenet.py" lenet.pt || exit 1

start=$(date +%s)
timeout 600 "$TROUPE" train --model=torchscript:lenet.pt --algo=downpour \
  --workers=2 --epochs="$EPOCHS" --target-accuracy="$TARGET" --seed=1 \
  --progress=none --json --save=lenet.safetensors >train.json 2>train.err
status=$?
cat train.err >&2
[ $status -eq 0 ] || { echo "FAIL: troupe train exited $status" >&2; exit 1; }
echo "troupe train took $(($(date +%s) - start)) s" >&2

# The figures, and the saved model evaluated again.
timeout 300 "$TROUPE" eval --model=lenet.safetensors --json >eval.json \
  2>eval.err || { cat eval.err >&2; echo "FAIL: troupe eval" >&2; exit 1; }
"$PY" - "$TARGET" <<'EOF'
import json, struct, sys
import torch
target = float(sys.argv[1])
run = json.loads(open("train.json").read().strip().splitlines()[-1])
ev = json.loads(open("eval.json").read().strip().splitlines()[-1])
acc, epochs = run["test_accuracy"], run.get("epochs")
print(f"torchscript LeNet, downpour, 2 workers: test accuracy {acc:.4f} "
      f"after {epochs:.2f} epochs, {run['seconds']:.1f} s, "
      f"{run['samples_per_sec']:.0f} samples/s; troupe eval "
      f"{ev['test_accuracy']:.4f}", file=sys.stderr)
assert run["model"] == "lenet", run["model"]
assert run["model_description"]["layers"][0]["type"] == "torchscript"
assert acc >= target, f"test accuracy {acc} below {target}"
assert abs(ev["test_accuracy"] - acc) < 0.005, (ev["test_accuracy"], acc)
# The saved tensors are the module's state, "0." before its names.
data = open("lenet.safetensors", "rb").read()
header = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
saved = {k[2:]: v["shape"] for k, v in header.items() if k != "__metadata__"}
state = {k: list(v.shape) for k, v in torch.jit.load("lenet.pt").state_dict().items()}
assert saved == state, (saved, state)
EOF
