#!/usr/bin/env bash
# The README's pictures are the studio's own snapshots (tests/test_studio_snapshots.py, the main screen
# while playing): docs/screenshot.svg at 120x40, docs/screenshot-80x24.svg at 80x24. After a layout change,
# check the snapshots, update them (pytest tests/test_studio_snapshots.py --snapshot-update), then run this.
set -euo pipefail
cd "$(dirname "$0")/.."
SNAPS=tests/__snapshots__/test_studio_snapshots
cp "$SNAPS/test_snapshot_sizes[playing-120x40].svg" docs/screenshot.svg
cp "$SNAPS/test_snapshot_sizes[playing-80x24].svg" docs/screenshot-80x24.svg
echo "docs/screenshot.svg, docs/screenshot-80x24.svg"
