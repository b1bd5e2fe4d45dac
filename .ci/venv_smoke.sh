#!/usr/bin/env bash
# CI, the package as a user gets it: build the wheel, install it with its test extra into a fresh
# virtualenv outside the repository, and run the smoke set (.ci/venv_smoke.py) from a directory that
# holds no byoc file. Prints the seconds each part takes.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/byoc-venv-smoke.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
start=$SECONDS

# The wheel is built from a copy of the sources (tracked and new files, as `git status` sees them), so the
# build leaves nothing in the clone.
mkdir "$WORK/src"
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$WORK/src"
python3 -m pip wheel -q --disable-pip-version-check --no-deps -w "$WORK/dist" "$WORK/src"
echo "venv smoke: wheel built ($((SECONDS - start)) s)"

python3 -m venv "$WORK/venv"
wheel=$(ls "$WORK"/dist/byoc_compiler-*.whl)
"$WORK/venv/bin/pip" install -q --disable-pip-version-check "${wheel}[test]"
echo "venv smoke: installed with the test extra into a fresh virtualenv ($((SECONDS - start)) s)"

mkdir "$WORK/user"
cd "$WORK/user"
env -u PYTHONPATH -u BYOC_CONFIG "$WORK/venv/bin/python" "$REPO/.ci/venv_smoke.py" "$REPO" "$wheel"
echo "venv smoke: passed ($((SECONDS - start)) s in all)"
