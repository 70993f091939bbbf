"""Speaks mvp_probe.py's protocol with a fixed cluster. FAKE_PROBE_DIE_AFTER=n exits after n answers;
FAKE_PROBE_HANG=1 never answers a request; FAKE_PROBE_NO_GCS=1 never connects (says why each second, as
mvp_probe.py does when the GCS is not there); FAKE_PROBE_EXIT=n writes a line on stderr and exits n at once; FAKE_PROBE_REMOVE_AFTER=n answers without
the placement group after n answers (Ray removed it: its table no longer shows it as live); FAKE_PROBE_LATE_GCS=n
says n times at once that it cannot connect, then is ready (lines written while mvp did not read them)."""
import json
import os
import sys
import time

if os.environ.get("FAKE_PROBE_EXIT"):
    print("fakeprobe: something else went wrong", file=sys.stderr, flush=True)
    sys.exit(int(os.environ["FAKE_PROBE_EXIT"]))
if os.environ.get("FAKE_PROBE_NO_GCS") == "1":
    while True:
        print(json.dumps({"ready": False, "error": "RuntimeError: Failed to connect to GCS at 127.0.0.1:1"}), flush=True)
        time.sleep(1)

late = int(os.environ.get("FAKE_PROBE_LATE_GCS", "0"))
for _ in range(late):  # the GCS came back while mvp was not reading: n error lines wait ahead of the ready one
    print(json.dumps({"ready": False, "error": "RuntimeError: Failed to connect to GCS at 127.0.0.1:1"}), flush=True)

die_after = int(os.environ.get("FAKE_PROBE_DIE_AFTER", "0"))
hang = os.environ.get("FAKE_PROBE_HANG") == "1"
remove_after = int(os.environ.get("FAKE_PROBE_REMOVE_AFTER", "0"))
print(json.dumps({"ready": True}), flush=True)
n = 0
for _ in sys.stdin:
    if hang:
        continue
    n += 1
    print(json.dumps({"ok": True, "nodes": [
        {"node_id": "aa", "alive": True, "is_head": False, "total": {"GPU": 4.0}, "available": {"GPU": 2.0}}],
        "placement_groups": [] if remove_after and n > remove_after else [
            {"placement_group_id": "p1", "creator_job_id": "01000000", "state": "CREATED",
             "scheduling_state": "FINISHED", "strategy": "STRICT_PACK", "bundles": [{"GPU": 1.0}], "node_id": "aa"}],
        "n": n}), flush=True)
    if die_after and n >= die_after:
        sys.exit(0)
