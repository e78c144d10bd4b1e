# The driver of bench/byzantine (see there): runs the matrix, prints JSON.
import json
import os
import subprocess
import sys
import time

(tmp, troupe, models, fs, workers, half, epochs, seed, rules, attacks, algo,
 group_size, clip_radius, extra) = sys.argv[1:]
extra = extra.split()
models, rules, attacks = models.split(), rules.split(), attacks.split()
fs = [int(f) for f in fs.split()]
workers, seed, epochs = int(workers), int(seed), float(epochs)
half = half == "true"
# The rules that need f, and how large it may be for n workers.
needs_f = {"krum", "multi_krum", "trimmed_mean", "cge"}
up_to_half = ["median", "geomed", "cclip", "licm"]


def fits(rule, n, f):
    # A DS-Sync rule sees one group at a time; SGP mixes with cclip only.
    if algo == "sgp" and rule not in ("mean", "cclip"):
        return False
    if algo == "dssync":
        n = min(n, int(group_size))
    if rule in ("krum", "multi_krum"):
        return n > 2 * f + 2
    if rule == "trimmed_mean":
        return n > 2 * f
    return True


def run(model, rule, n, f, attack):
    args = [troupe, "train", f"--algo={algo}", f"--model={model}",
            f"--workers={n}", f"--epochs={epochs}",
            f"--seed={seed}", "--json", "--progress=none",
            f"--aggregation={rule}"] + extra
    if algo in ("sync", "downpour"):
        args.append("--shards=1")
    if algo == "dssync":
        args.append(f"--group-size={group_size}")
    if rule == "cclip" and clip_radius:
        args.append(f"--agg-clip-radius={clip_radius}")
    if rule in needs_f:
        # In a DS-Sync group of m the rule tolerates what fits in m.
        args.append(f"--agg-f={min(f, 1) if algo == 'dssync' else f}")
    if f > 0:
        args += [f"--byzantine={f}", f"--attack={attack}"]
    t0 = time.time()
    p = subprocess.run(args, capture_output=True, text=True, timeout=3600)
    wall = time.time() - t0
    out = {"rule": rule, "attack": attack if f else None, "n": n, "f": f,
           "wall_seconds": round(wall, 2)}
    try:
        r = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        out["error"] = (p.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"  {model} {rule} f={f} {attack}: failed: {out['error']}",
              file=sys.stderr)
        return out
    out["test_accuracy"] = r.get("test_accuracy")
    out["samples_per_sec"] = r.get("samples_per_sec")
    out["outcome"] = r.get("outcome", r.get("stop_reason"))
    gone = {}
    for x in r.get("rejected_pushes", []):
        key = f"worker {x['worker']}: {x['reason']}"
        gone[key] = gone.get(key, 0) + x["count"]
    out["rejected_or_discarded"] = gone
    if "byzantine" in r:
        out["byzantine"] = r["byzantine"]
    print(f"  {model} {rule:12s} n={n} f={f} {attack if f else '-':10s} "
          f"acc {out['test_accuracy']} ({wall:.0f} s)", file=sys.stderr)
    return out


result = {"benchmark": "byzantine",
          "job": f"{algo}"
                 + (", 1 shard" if algo in ("sync", "downpour") else "")
                 + (f", groups of {group_size}" if algo == "dssync" else "")
                 + (f", cclip radius {clip_radius}" if clip_radius else "")
                 + (f", {' '.join(extra)}" if extra else "")
                 + f", seed {seed}, {epochs} epoch(s), "
                 "the last f workers attack",
          "loadavg_start": float(open("/proc/loadavg").read().split()[0]),
          "models": {}}
for model in models:
    runs = []
    for f in fs:
        for rule in rules:
            if not fits(rule, workers, f):
                continue
            if algo == "dssync" and rule in needs_f and f > 1:
                continue  # --agg-f is 1 in a group (fits() above)
            for attack in (attacks if f > 0 else ["none"]):
                runs.append(run(model, rule, workers, f, attack))
    if half:
        n, f = workers - 1, (workers - 1) // 2  # 4 of 9 at the default
        for rule in up_to_half:
            if rule in rules:
                for attack in attacks:
                    runs.append(run(model, rule, n, f, attack))
    table = {}
    for x in runs:
        if x.get("test_accuracy") is None:
            continue
        key = f"n={x['n']} f={x['f']}"
        table.setdefault(key, {}).setdefault(x["rule"], {})[
            x["attack"] or "none"] = x["test_accuracy"]
    worst = {}
    for key, per_rule in table.items():
        for rule, accs in per_rule.items():
            a = min(accs.items(), key=lambda kv: kv[1])
            worst.setdefault(key, {})[rule] = {"accuracy": a[1],
                                               "attack": a[0]}
    base = [x for x in runs if x["f"] == 0 and x["rule"] == "mean"
            and x.get("samples_per_sec")]
    cost = {}
    if base:
        for x in runs:
            if x["f"] == 0 and x.get("samples_per_sec"):
                cost[x["rule"]] = x["samples_per_sec"] / base[0]["samples_per_sec"]
    best_at = {}
    for key, per_rule in worst.items():
        rule = max(per_rule.items(), key=lambda kv: kv[1]["accuracy"])
        best_at[key] = {"rule": rule[0], **rule[1]}
    result["models"][model] = {
        "no_attack_mean": base[0]["test_accuracy"] if base else None,
        "accuracy": table, "worst_case": worst, "best_rule_worst_case": best_at,
        "throughput_vs_mean": cost, "runs": runs}
result["loadavg_end"] = float(open("/proc/loadavg").read().split()[0])
print(json.dumps(result))
