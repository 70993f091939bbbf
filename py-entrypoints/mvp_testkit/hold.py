"""Hold GPUs in a chosen shape, behind mvp's back, to make races and fragmentation on purpose.

    python3 -m mvp_testkit.hold --bundles 2 --gpus-per-bundle 2 --strategy STRICT_SPREAD --hold 600

Creates one placement group of `bundles` bundles of {"GPU": g, "CPU": c} (c: --cpus-per-bundle, default 1; a
resource of 0 is left out, so --gpus-per-bundle 0 holds CPUs only), waits until it is placed, prints
"holding", then sleeps `hold` seconds (or until stopped). STRICT_SPREAD puts each bundle on a different node, which
is how a test leaves 2 + 2 GPUs free on two 4-GPU nodes.
"""
import argparse
import sys
import time

import ray
from ray.util.placement_group import placement_group


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--bundles", type=int, default=1)
    p.add_argument("--gpus-per-bundle", type=float, default=1)
    p.add_argument("--cpus-per-bundle", type=float, default=1)
    p.add_argument("--strategy", default="STRICT_PACK")
    p.add_argument("--hold", type=float, default=600)
    a = p.parse_args()
    ray.init()
    bundle = {k: v for k, v in (("GPU", a.gpus_per_bundle), ("CPU", a.cpus_per_bundle)) if v > 0}
    pg = placement_group([bundle] * a.bundles, strategy=a.strategy)
    ray.get(pg.ready())
    print("holding", a.bundles, "x", bundle, a.strategy, flush=True)
    end = time.time() + a.hold
    while time.time() < end:
        time.sleep(0.5)
    print("released", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
