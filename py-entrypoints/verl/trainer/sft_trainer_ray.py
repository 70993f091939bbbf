"""Stand-in for verl.trainer.sft_trainer_ray (verl ≥ 0.7): no fail-fast check, {"CPU": 10, "GPU": 1} bundles."""
import sys

from verl._standin import run

if __name__ == "__main__":
    sys.exit(run("sft", sys.argv[1:], default_gpus_per_node=1, cpus_per_bundle=10, fail_fast_check=False))
