"""Make the checkout importable as ansible_collections.inferops.sglang for every test."""
import sys
from pathlib import Path

COLLECTIONS = Path(__file__).resolve().parents[1] / "collections"
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))
