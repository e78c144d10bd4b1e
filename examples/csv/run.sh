#!/usr/bin/env bash
# Trains troupe on a CSV file: the Wisconsin breast cancer data (569
# tumours, 30 measurements each, malignant or benign) as scikit-learn ships
# it, given a header row in a temporary directory (nothing is copied into
# the repository), then evaluates the saved model on the held-out tenth.
#   examples/csv/run.sh [troupe train flags...]
# TROUPE names the binary (default: troupe on the PATH, else
# build/apps/troupe). Without python3-sklearn it says so and exits 77.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

# scikit-learn's copy: first row "569,30,malignant,benign" (examples,
# features, class names), then 30 features and the class (0 malignant, 1
# benign) per line.
find_csv() {
  local f=/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv
  [ -f "$f" ] && { echo "$f"; return; }
  f=$(dpkg -L python3-sklearn 2>/dev/null | grep '/datasets/data/breast_cancer\.csv$' | head -1) || true
  [ -n "$f" ] && [ -f "$f" ] && { echo "$f"; return; }
  for py in /usr/bin/python3 python3; do
    f=$("$py" -c 'import os, sklearn.datasets as d; print(os.path.join(os.path.dirname(d.__file__), "data", "breast_cancer.csv"))' 2>/dev/null) || continue
    [ -f "$f" ] && { echo "$f"; return; }
  done
}
SOURCE=$(find_csv) || true
if [ -z "$SOURCE" ]; then
  echo "SKIPPED: scikit-learn's breast_cancer.csv not found (apt-get install python3-sklearn)" >&2
  exit 77
fi

TROUPE=${TROUPE:-$(command -v troupe || echo "$HERE/../../build/apps/troupe")}
[ -x "$TROUPE" ] || { echo "no troupe at $TROUPE (build it, or set TROUPE)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/troupe-csv.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
DATA=$WORK/breast_cancer.csv

# The header sklearn's load_breast_cancer() gives as feature_names, and the
# class as the column "diagnosis".
awk -F, -v OFS=, '
  NR == 1 {
    if (NF != 4 || $2 != 30) { print "unexpected first row: " $0 > "/dev/stderr"; exit 1 }
    rows = $1
    split("radius,texture,perimeter,area,smoothness,compactness,concavity,concave points,symmetry,fractal dimension", p, ",")
    head = ""
    for (i = 1; i <= 10; i++) head = head "mean " p[i] ","
    for (i = 1; i <= 10; i++) head = head p[i] " error,"
    for (i = 1; i <= 10; i++) head = head "worst " p[i] ","
    print head "diagnosis"
    next
  }
  NF != 31 { print FILENAME ":" NR ": " NF " fields, expected 31" > "/dev/stderr"; exit 1 }
  { print; n++ }
  END { if (n != rows) { print "expected " rows " rows, found " n > "/dev/stderr"; exit 1 } }
' "$SOURCE" > "$DATA"
echo "$SOURCE -> $DATA ($(($(wc -l < "$DATA") - 1)) examples)" >&2

"$TROUPE" train --data="$DATA" --label-column=diagnosis \
  --model="$HERE/tabular.json" --epochs=30 --lr=0.05 --schedule=constant \
  --batch=32 --seed=1 --save="$WORK/tabular.safetensors" "$@"
"$TROUPE" eval --model="$WORK/tabular.safetensors"
