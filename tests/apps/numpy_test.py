#!/usr/bin/env python3
"""Reads a model troupe saved with numpy alone (no troupe code): the file is
safetensors (an 8-byte little-endian header length, a JSON header padded to a
multiple of 8, the F32 data back to back) and its weights are troupe's own:
the FNV-1a hash of the flat parameter vector rebuilt from the tensors equals
the param_hash troupe reported for the run.

    numpy_test.py TROUPE WORKDIR
"""
import json
import struct
import subprocess
import sys

import numpy as np

troupe, work = sys.argv[1], sys.argv[2]
seed = 11
print(f"seed {seed}", flush=True)
path = f"{work}/numpy.safetensors"
run = subprocess.run(
    [troupe, "train", "--algo=sgd", "--model=mlp", "--max-steps=30",
     "--train-examples=2048", f"--seed={seed}", "--progress=none", "--json",
     f"--save={path}"], capture_output=True, text=True, timeout=240)
assert run.returncode == 0, run.stderr
result = json.loads(run.stdout.strip().splitlines()[-1])

with open(path, "rb") as f:
    raw = f.read()
(n,) = struct.unpack("<Q", raw[:8])
assert n % 8 == 0, n
header = json.loads(raw[8:8 + n])
meta = header.pop("__metadata__")
assert all(isinstance(v, str) for v in meta.values())
assert meta["troupe.model"] == "mlp"
assert json.loads(meta["troupe.sample_shape"]) == [1, 28, 28]
assert json.loads(meta["troupe.options"])["seed"] == seed
data = raw[8 + n:]
names = sorted(header, key=lambda k: header[k]["data_offsets"][0])
assert names == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight",
                 "4.bias"], names
at = 0
tensors = {}
for name in names:
    t = header[name]
    begin, end = t["data_offsets"]
    assert t["dtype"] == "F32" and begin == at, (name, t)
    a = np.frombuffer(data[begin:end], dtype="<f4").reshape(t["shape"])
    tensors[name] = a
    at = end
assert at == len(data)
assert tensors["0.weight"].shape == (256, 784)
assert tensors["4.weight"].shape == (10, 128)

# troupe's flat vector: per layer the weight (out x in, column-major, i.e.
# the transpose in row-major order), then the bias.
flat = np.concatenate([
    (tensors[name].T if name.endswith("weight") else tensors[name]).ravel()
    for name in names]).astype("<f4")
h = 1469598103934665603
for b in flat.tobytes():
    h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
print(f"numpy hash {h:016x}, troupe param_hash {result['param_hash']}")
assert f"{h:016x}" == result["param_hash"]

# The model itself: numpy's forward pass on the first test images agrees
# with troupe predict.
scale = json.loads(meta["troupe.input_scaling"])
x = np.random.default_rng(seed).random((5, 784), dtype=np.float32)
libsvm = "".join(
    "0 " + " ".join(f"{i + 1}:{v!r}" for i, v in enumerate(row)) + "\n"
    for row in x.astype(np.float64))
pred = subprocess.run([troupe, "predict", f"--model={path}", "--input=-"],
                      input=libsvm, capture_output=True, text=True, timeout=60)
assert pred.returncode == 0, pred.stderr
z = (x - np.float32(scale["mean"])) / np.float32(scale["stddev"])
for layer in ("0", "2"):
    z = np.maximum(z @ tensors[layer + ".weight"].T + tensors[layer + ".bias"], 0)
z = z @ tensors["4.weight"].T + tensors["4.bias"]
ours = [int(np.argmax(r)) for r in z]
theirs = [int(line.split()[1]) for line in pred.stdout.splitlines()]
print(f"numpy classes {ours}, troupe predict {theirs}")
assert ours == theirs
print("PASS")
