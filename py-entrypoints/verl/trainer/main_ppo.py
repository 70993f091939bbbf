"""Stand-in for verl.trainer.main_ppo (PPO and GRPO): a TaskRunner actor (num_cpus=1) runs the fail-fast check, then
asks for {"CPU": 3, "GPU": 1} bundles."""
import sys

from verl._standin import run

if __name__ == "__main__":
    sys.exit(run("ppo", sys.argv[1:], default_gpus_per_node=8, cpus_per_bundle=3, fail_fast_check=True, task_runner=True))
