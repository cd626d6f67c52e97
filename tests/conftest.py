"""Make the checkout importable as ansible_collections.inferops.sglang for every test."""
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The checkout as ansible_collections.inferops.sglang, and the lab's stand-in as sglang_sim.
for path in (REPO / "collections", REPO / "lab"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
