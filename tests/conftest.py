"""Shared pytest set-up: the repository root is importable (for `targets.*`) wherever pytest starts."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The test matrix's options (--matrix, --fuzz-minutes), markers and summary table, known wherever pytest starts.
MATRIX = ROOT / "tests" / "matrix"
if str(MATRIX) not in sys.path:
    sys.path.insert(0, str(MATRIX))
pytest_plugins = ["matrix_plugin"]
