"""Server start → `initialize` answered (goal ≤ 0.5 s), and idle memory without torch (goal ≤ 80 MB).

The server never imports torch; its worker is a separate process, so the server's own RSS is
what an editor pays while idle. Prints the figures and their ratio to the goals.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_lsp import Client  # noqa: E402

RUNS = 5
GOAL_START_S = 0.5
GOAL_RSS_MB = 80.0


def main() -> None:
    starts: list[float] = []
    rss: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for _ in range(RUNS):
            c = Client(root)
            starts.append(c.initialize(root, trusted=False))  # untrusted: no worker, pure server cost
            time.sleep(1.0)
            rss.append(c.rss_mb())
            c.close()
    start = statistics.median(starts)
    mem = statistics.median(rss)
    print(
        f"server start -> initialized: median {start:.3f} s over {RUNS} runs (min {min(starts):.3f}, max {max(starts):.3f}); "
        f"goal {GOAL_START_S} s; ratio {start / GOAL_START_S:.2f}"
    )
    print(f"idle server RSS without torch: median {mem:.1f} MB; goal {GOAL_RSS_MB:.0f} MB; ratio {mem / GOAL_RSS_MB:.2f}")


if __name__ == "__main__":
    main()
