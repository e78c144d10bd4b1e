#!/usr/bin/env bash
# Trains a model described in JSON (small_resnet.json: convolutions, batch
# normalization, a residual block, dropout) with Downpour SGD, two workers
# and a parameter server, on 12000 Fashion-MNIST images; saves it, then
# evaluates the saved model on the 10000 test images.
#   examples/json_model/run.sh [troupe train flags...]
# TROUPE names the binary (default: troupe on the PATH, else
# build/apps/troupe).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TROUPE=${TROUPE:-$(command -v troupe || echo "$HERE/../../build/apps/troupe")}
[ -x "$TROUPE" ] || { echo "no troupe at $TROUPE (build it, or set TROUPE)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/troupe-json-model.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

"$TROUPE" train --model="$HERE/small_resnet.json" --algo=downpour \
  --workers=2 --shards=1 --train-examples=12000 --epochs=3 --lr=0.03 --seed=1 \
  --save="$WORK/small_resnet.safetensors" "$@"
"$TROUPE" eval --model="$WORK/small_resnet.safetensors"
