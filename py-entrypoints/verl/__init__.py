"""A stand-in for verl (https://github.com/volcengine/verl) for machines without CUDA.

It is NOT verl. It keeps what matters to mvp: the command line (`python3 -m verl.trainer.main_ppo <hydra
overrides>`, `python3 -m verl.trainer.sft_trainer_ray …`), verl's fail-fast GPU check with its exact message, and
placement groups shaped like verl's that hold the GPUs while it "trains". See py-entrypoints/README.md.
"""
__version__ = "0.0.0+mvp-standin"
