"""What the stand-in entrypoints share.

main_ppo runs everything after ray.init() in a TaskRunner actor of num_cpus=1, as verl does (its output reaches the
driver's log through Ray, each line prefixed with "(TaskRunner pid=…)"); the Ray SFT trainer runs in its driver.

Keys read from the Hydra overrides (a leading "+" or "++" is accepted, the last value of a repeated key wins):
  trainer.nnodes, trainer.n_gpus_per_node     the gang, as verl reads them
  mvp_test.hold_s        seconds to hold the GPUs once placed (default 5)
  mvp_test.exit_code     exit code at the end (default 0)
  mvp_test.last_words    a line printed to stderr just before a non-zero exit code, as a run's traceback ends
                         (tests give Ray's words for a lost node, so that the run is classed as one)
  mvp_test.wait_file     wait until this file exists before the resource check (tests make races exact with it)
  mvp_test.dump_args     write {"argv", "env", "cwd"} as JSON to this path first (tests check what arrived)
  mvp_test.stall_after   stop writing progress after this many steps but keep holding (a hung run)
  mvp_test.actors        1: as verl's worker groups do, start one worker actor in each node's placement group and
                         call every one of them at each step, so that a worker node lost under the run fails the
                         driver with Ray's own error (on Ray 2.60 first ActorUnavailableError, "Connection refused";
                         ActorDiedError "… because its node has died" once Ray marks the node dead); default 0
  mvp_test.ignore_sigterm 1: print a line and carry on when SIGTERM comes (a run that does not stop when asked, so
                         that only the SIGKILL after Ray's stop wait ends it); default 0
  mvp_test.linger_s      after the run, remove its placement groups (freeing its GPUs) and go on this many
                         seconds before exiting, as a driver that uploads or evaluates on CPU after training would;
                         default 0 (the groups go when the driver exits, as in verl)
Checkpoints, as verl keeps them: with trainer.save_freq=K (verl's default -1 saves none) every K-th step writes
<trainer.default_local_dir>/global_step_<step>/ and latest_checkpointed_iteration.txt. With
trainer.resume_mode=auto given explicitly, a run whose default_local_dir holds a checkpoint resumes from it: it
prints "verl-standin: resumed from step N" and counts its steps on from N (progress metrics.resumed_from_step).
Results: at the end it writes summary.json and model/weights.bin (1 KiB) into $MVP_RESULTS_DIR.
Progress: each step appends {"step", "data"} to $VERL_FILE_LOGGER_PATH (verl's file logger's format) and rewrites
$MVP_PROGRESS_FILE (default: progress.json beside it) atomically with step, total_steps, percent_complete, name and
metrics, as verl's file logger would be adapted to do.
Hydra's output folder: given hydra.run.dir, it writes <dir>/.hydra/overrides.yaml (the overrides, one per line, as
Hydra records them) there. Real verl (@hydra.main) writes .hydra/ to outputs/<date>/<time> under the working
folder when hydra.run.dir is not given; the stand-in then writes nothing, to keep test machines clean.
Every other key is accepted and ignored, as verl's config would take it.
"""
import json
import math
import os
import signal
import sys
import time


def parse_overrides(argv):
    """Hydra-style key=value overrides → dict; exits 2 on a malformed one, like Hydra."""
    out = {}
    for arg in argv:
        if "=" not in arg:
            print(f"Error parsing override '{arg}'\nmissing '=' (overrides are key=value)", file=sys.stderr)
            sys.exit(2)
        key, value = arg.split("=", 1)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1].replace("\\" + value[0], value[0])  # a quoted value, as Hydra reads it
        out[key.lstrip("+~")] = value
    return out


def dump_args(path, argv):
    env = {k: v for k, v in os.environ.items() if k.startswith(("MVP_", "VERL_", "TENSORBOARD", "WANDB"))}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"argv": argv, "env": env, "cwd": os.getcwd()}, f, indent=2)


def progress_path():
    path = os.environ.get("MVP_PROGRESS_FILE")
    if not path and os.environ.get("VERL_FILE_LOGGER_PATH"):
        path = os.path.join(os.path.dirname(os.environ["VERL_FILE_LOGGER_PATH"]), "progress.json")
    return path


def report(step, total, metrics, name="training"):
    """One step's record: a line of the file logger, and the progress file replaced in one rename."""
    logger_path = os.environ.get("VERL_FILE_LOGGER_PATH")
    if logger_path:
        os.makedirs(os.path.dirname(logger_path), exist_ok=True)
        with open(logger_path, "a") as f:
            f.write(json.dumps({"step": step, "data": metrics}) + "\n")
    path = progress_path()
    if not path:
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    body = {"step": step, "total_steps": total, "percent_complete": round(100.0 * step / max(total, 1), 1),
            "name": name, "metrics": metrics}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(body, f)
    os.replace(tmp, path)


def latest_checkpoint(ckpt_dir):
    """verl's find_latest_ckpt_path: the step in latest_checkpointed_iteration.txt, if its folder exists."""
    try:
        with open(os.path.join(ckpt_dir, "latest_checkpointed_iteration.txt")) as f:
            step = int(f.read().strip())
    except (OSError, ValueError):
        return 0
    return step if os.path.isdir(os.path.join(ckpt_dir, f"global_step_{step}")) else 0


def save_checkpoint(ckpt_dir, step):
    folder = os.path.join(ckpt_dir, f"global_step_{step}")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "state.json"), "w") as f:
        json.dump({"step": step}, f)
    tmp = os.path.join(ckpt_dir, ".latest_checkpointed_iteration.txt.tmp")
    with open(tmp, "w") as f:
        f.write(str(step))
    os.replace(tmp, os.path.join(ckpt_dir, "latest_checkpointed_iteration.txt"))


def write_results(workload, steps):
    out = os.environ.get("MVP_RESULTS_DIR")
    if not out:
        return
    # The folder is mvp's to make before the job starts (user code opens files in it straight away).
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"workload": workload, "steps": steps}, f)
    os.makedirs(os.path.join(out, "model"), exist_ok=True)
    with open(os.path.join(out, "model", "weights.bin"), "wb") as f:
        f.write(bytes(range(256)) * 4)


def check_resource_available(nnodes, n_gpus_per_node):
    """verl's ResourcePoolManager._check_resource_available: the total only, GPUs summed as a float."""
    import ray

    node_available_resources = ray._private.state.available_resources_per_node()
    node_available_gpus = {node: info.get("GPU", 0) for node, info in node_available_resources.items()}
    total_available_gpus = sum(node_available_gpus.values())
    total_required_gpus = nnodes * n_gpus_per_node
    if total_available_gpus < total_required_gpus:
        raise ValueError(
            f"Total available GPUs {total_available_gpus} is less than total desired GPUs {total_required_gpus}"
        )


def start_workers(pgs):
    """One actor in bundle 0 of each placement group (verl's RayWorkerGroup puts its workers in the bundles)."""
    import ray
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    @ray.remote(num_cpus=1, num_gpus=1)
    class Worker:
        def step(self, n):
            return n

    actors = [
        Worker.options(scheduling_strategy=PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=0)).remote()
        for pg in pgs
    ]
    ray.get([a.step.remote(0) for a in actors])
    return actors


def run(workload, argv, default_gpus_per_node, cpus_per_bundle, fail_fast_check, task_runner=False):
    """The entrypoint's main. With task_runner, as verl's main_ppo does, everything after ray.init() runs in a
    TaskRunner actor of num_cpus=1 (the driver only waits for it), so the run needs that CPU on some node before it
    checks or asks for anything. Ray places it as it places verl's (no strategy given)."""
    cfg = parse_overrides(argv)
    if "mvp_test.dump_args" in cfg:
        dump_args(cfg["mvp_test.dump_args"], argv)
    if cfg.get("hydra.run.dir"):
        hydra_dir = os.path.join(cfg["hydra.run.dir"], ".hydra")
        os.makedirs(hydra_dir, exist_ok=True)
        with open(os.path.join(hydra_dir, "overrides.yaml"), "w") as f:
            f.writelines("- %s\n" % json.dumps(a) for a in argv)
    try:
        nnodes = int(cfg.get("trainer.nnodes", 1))
        gpus = int(cfg.get("trainer.n_gpus_per_node", default_gpus_per_node))
        float(cfg.get("mvp_test.hold_s", 5))
        float(cfg.get("mvp_test.linger_s", 0))
        int(cfg.get("mvp_test.exit_code", 0))
    except ValueError as e:
        print(f"Error: bad override value: {e}", file=sys.stderr)
        return 2

    import ray

    ray.init()
    if cfg.get("mvp_test.ignore_sigterm", "0") not in ("0", "false", "False", ""):
        # After ray.init(), so that nothing Ray installs replaces it.
        signal.signal(signal.SIGTERM, lambda *_: print("verl-standin: SIGTERM ignored (mvp_test.ignore_sigterm)", flush=True))
    print(f"verl-standin: workload={workload} nnodes={nnodes} n_gpus_per_node={gpus}", flush=True)
    driver_node = ray.get_runtime_context().get_node_id()
    print(f"verl-standin: driver node {driver_node}", flush=True)
    if not task_runner:
        code = train(workload, cfg, nnodes, gpus, cpus_per_bundle, fail_fast_check)
    else:
        runner = ray.remote(num_cpus=1)(TaskRunner).remote()
        print("verl-standin: waiting for the TaskRunner actor (num_cpus=1)", flush=True)
        code = ray.get(runner.run.remote(workload, cfg, nnodes, gpus, cpus_per_bundle, fail_fast_check))
    # The driver's own last line (verl's driver prints none): what the TaskRunner prints reaches the driver's log
    # through Ray's forwarding of an actor's output, asynchronously, so on a loaded machine the driver can exit
    # before those lines arrive; this one is the driver's, written before it exits. Tests that check a log is kept
    # to its end look for it.
    print(f"verl-standin: driver exits with code {code}", flush=True)
    return code


class TaskRunner:
    """verl's main_ppo.TaskRunner: the actor in which the whole run happens."""

    def run(self, workload, cfg, nnodes, gpus, cpus_per_bundle, fail_fast_check):
        import ray

        print(f"verl-standin: TaskRunner on node {ray.get_runtime_context().get_node_id()}", flush=True)
        return train(workload, cfg, nnodes, gpus, cpus_per_bundle, fail_fast_check)


def train(workload, cfg, nnodes, gpus, cpus_per_bundle, fail_fast_check):
    """The run after ray.init(): the resource check, the gang, the steps; returns the exit code."""
    import ray
    from ray.util.placement_group import placement_group

    hold_s = float(cfg.get("mvp_test.hold_s", 5))
    exit_code = int(cfg.get("mvp_test.exit_code", 0))
    wait_file = cfg.get("mvp_test.wait_file")
    if wait_file:
        print(f"verl-standin: waiting for {wait_file}", flush=True)
        give_up = time.time() + 600  # a test that failed before it made the file must not leave a driver waiting
        while not os.path.exists(wait_file):
            if time.time() > give_up:
                raise RuntimeError(f"verl-standin: {wait_file} did not appear within 600 s")
            time.sleep(0.2)

    if fail_fast_check:
        check_resource_available(nnodes, gpus)

    # RayResourcePool.get_placement_groups: one STRICT_PACK group per node, no timeout on ready().
    pgs = [
        placement_group([{"CPU": cpus_per_bundle, "GPU": 1}] * gpus, strategy="STRICT_PACK")
        for _ in range(nnodes)
    ]
    print(f"verl-standin: waiting for {nnodes} placement group(s) of {gpus} GPU bundles", flush=True)
    ray.get([pg.ready() for pg in pgs])
    print("verl-standin: placement groups ready", flush=True)

    actors = []
    if cfg.get("mvp_test.actors", "0") not in ("0", "false", "False", ""):
        actors = start_workers(pgs)
        print(f"verl-standin: {len(actors)} worker actor(s) ready", flush=True)

    stall_after = int(cfg.get("mvp_test.stall_after", -1))
    ckpt_dir = cfg.get("trainer.default_local_dir", "")
    save_freq = int(cfg.get("trainer.save_freq", -1))
    resumed = 0
    if cfg.get("trainer.resume_mode") == "auto" and ckpt_dir:
        resumed = latest_checkpoint(ckpt_dir)
        if resumed:
            print(f"verl-standin: resumed from step {resumed} ({ckpt_dir}/global_step_{resumed})", flush=True)
        else:
            print(f"verl-standin: no checkpoint in {ckpt_dir}; training from scratch", flush=True)
    total = resumed + max(int(math.ceil(hold_s)), 1)
    start = time.time()
    step = resumed
    while True:
        elapsed = time.time() - start
        if elapsed >= hold_s:
            break
        step += 1
        print(f"verl-standin: step {step} progress {min(elapsed / hold_s, 1.0):.2f}", flush=True)
        if actors:
            ray.get([a.step.remote(step) for a in actors])  # an actor lost with its node raises here, as in verl
        if ckpt_dir and save_freq > 0 and step % save_freq == 0:
            save_checkpoint(ckpt_dir, step)
        metrics = {"loss": round(1.0 / step, 4)}
        if resumed:
            metrics["resumed_from_step"] = resumed
        if stall_after < 0 or step - resumed <= stall_after:
            report(step, total, metrics)
        elif step == stall_after + 1:
            print("verl-standin: stalled (mvp_test.stall_after): no more progress", flush=True)
        time.sleep(min(1.0, max(hold_s - elapsed, 0.0)))
    if stall_after < 0:
        metrics = {"loss": round(1.0 / max(step, 1), 4)}
        if resumed:
            metrics["resumed_from_step"] = resumed
        report(max(step, total), max(step, total), metrics, name="done")
    write_results(workload, step)
    linger_s = float(cfg.get("mvp_test.linger_s", 0))
    if linger_s > 0:
        from ray.util.placement_group import remove_placement_group

        for a in actors:
            ray.kill(a)
        for pg in pgs:
            remove_placement_group(pg)
        print(f"verl-standin: placement groups removed; going on for {linger_s:g} s (mvp_test.linger_s)", flush=True)
        time.sleep(linger_s)
    print(f"verl-standin: done after {step} step(s), exit code {exit_code}", flush=True)
    last_words = cfg.get("mvp_test.last_words")
    if last_words and exit_code != 0:
        print(last_words, file=sys.stderr, flush=True)
    return exit_code
