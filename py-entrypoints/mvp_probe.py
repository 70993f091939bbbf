"""mvp's live probe of a Ray cluster: per-node totals and availability, and placement groups.

Run with Ray's Python by `mvp serve` (one long-lived child):

    python3 mvp_probe.py --address <gcs host:port>

It reads the GCS the way verl's fail-fast check does (ray._private.state), without ray.init(), so it registers no
job and takes no resources. Protocol, one JSON object per line:
  - at start: {"ready": true} once connected (or {"ready": false, "error": "..."} while it keeps trying, each second);
  - then, for every line read on stdin: {"ok": true, "nodes": [...], "placement_groups": [...]} or
    {"ok": false, "error": "..."}; it never dies on a query error and reconnects on the next request;
  - it exits when stdin closes.
A node: {"node_id", "alive", "is_head", "total": {res: float}, "available": {res: float}} — a resource that is fully
used is absent from Ray's availability; it is reported here as 0.0. The head is the node whose resources include
"node:__internal_head__". A placement group: {"placement_group_id", "creator_job_id" (hex, as the Job API's
job_id), "state", "scheduling_state", "strategy", "bundles": [{res: float}], "node_id" (the node all its bundles are
on, "" when not placed or spread), "created_ns" (when the GCS took its creation request, unix ns)}; removed groups
are left out.

For people and scripts: --once prints one reading; --once --count-alive prints the number of alive nodes.
Token auth (RAY_AUTH_MODE=token) comes through RAY_AUTH_MODE / RAY_AUTH_TOKEN in the environment.
"""
import argparse
import json
import sys
import time

import ray
import ray._private.state as state_mod
from ray._common.utils import binary_to_hex
from ray.core.generated import gcs_pb2

HEAD_RESOURCE = "node:__internal_head__"
PG_STATES = {
    gcs_pb2.PlacementGroupTableData.PENDING: "PENDING",
    gcs_pb2.PlacementGroupTableData.PREPARED: "PREPARED",
    gcs_pb2.PlacementGroupTableData.CREATED: "CREATED",
    gcs_pb2.PlacementGroupTableData.RESCHEDULING: "RESCHEDULING",
}


def connect(address):
    st = state_mod.GlobalState()
    st._initialize_global_state(
        ray._raylet.GcsClientOptions.create(address, None, allow_cluster_id_nil=True, fetch_cluster_id_if_nil=False)
    )
    st.node_table()  # fail now if the GCS is not there
    return st


def is_internal(res):
    return res.startswith("node:") and res != HEAD_RESOURCE


def group_node(pg):
    """The node every bundle of a placed group is on (verl's groups are STRICT_PACK: one node each), else ""."""
    ids = {binary_to_hex(b.node_id) for b in pg.bundles if b.node_id}
    if len(ids) == 1 and len(pg.bundles) > 0 and all(b.node_id for b in pg.bundles):
        return ids.pop()
    return ""


def state_name(state):
    """The name of a placement group state the probe does not list (its number if protobuf knows no name)."""
    try:
        return gcs_pb2.PlacementGroupTableData.PlacementGroupState.Name(state)
    except ValueError:
        return f"STATE_{state}"


def reading(st):
    available = st.available_resources_per_node()
    nodes = []
    for n in st.node_table():
        node_id = n["NodeID"]
        total = {k: float(v) for k, v in (n.get("Resources") or {}).items() if not is_internal(k)}
        avail = available.get(node_id, {})
        nodes.append({
            "node_id": node_id,
            "alive": bool(n.get("Alive")),
            "is_head": HEAD_RESOURCE in total,
            "node_ip": n.get("NodeManagerAddress", ""),
            "total": total,
            "available": {k: float(avail.get(k, 0.0)) for k in total},
            # Its labels (Ray's ray.io/... and those of `ray start --labels`): a driver's label selector is
            # admitted by them.
            "labels": {str(k): str(v) for k, v in (n.get("Labels") or {}).items()},
        })
    groups = []
    for raw in st._connect_and_get_accessor().get_placement_group_table():
        pg = gcs_pb2.PlacementGroupTableData.FromString(raw)
        if pg.state == gcs_pb2.PlacementGroupTableData.REMOVED:
            continue  # mvp keeps a group it read and no longer reads as REMOVED (ray.Probe)
        # A state this probe does not know is passed on by its name: mvp takes it as not placed (it reserves the
        # group), never as removed (which it would take as freed).
        s = PG_STATES.get(pg.state) or state_name(pg.state)
        groups.append({
            "placement_group_id": binary_to_hex(pg.placement_group_id),
            "creator_job_id": binary_to_hex(pg.creator_job_id),
            "state": s,
            "scheduling_state": gcs_pb2.PlacementGroupStats.SchedulingState.Name(pg.stats.scheduling_state),
            "strategy": ["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"][pg.strategy] if pg.strategy < 4 else str(pg.strategy),
            "bundles": [{k: float(v) for k, v in b.unit_resources.items()} for b in pg.bundles],
            "node_id": group_node(pg),
            # When the GCS took its creation request (unix ns, the head's clock): a PENDING group has waited since.
            "created_ns": int(pg.stats.creation_request_received_ns),
            # When it was placed (its creation request plus Ray's end-to-end creation latency; 0 while not placed):
            # a run's max_runtime_s counts from then, not from the minutes its driver waited for it.
            "placed_ns": (int(pg.stats.creation_request_received_ns) + int(pg.stats.end_to_end_creation_latency_us) * 1000)
            if pg.stats.end_to_end_creation_latency_us > 0 and pg.stats.creation_request_received_ns > 0 else 0,
        })
    return {"ok": True, "nodes": nodes, "placement_groups": groups}


def emit(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--address", required=True, help="GCS host:port")
    p.add_argument("--once", action="store_true", help="print one reading and exit")
    p.add_argument("--count-alive", action="store_true", help="with --once: print the number of alive nodes")
    a = p.parse_args()

    if a.once:
        st = connect(a.address)
        r = reading(st)
        if a.count_alive:
            print(sum(1 for n in r["nodes"] if n["alive"]))
        else:
            print(json.dumps(r, indent=2))
        return 0

    st = None
    while st is None:
        try:
            st = connect(a.address)
        except Exception as e:  # noqa: BLE001 - report and keep trying
            emit({"ready": False, "error": f"{type(e).__name__}: {e}"})
            time.sleep(1)
    emit({"ready": True})
    for _ in sys.stdin:
        try:
            if st is None:
                st = connect(a.address)
            emit(reading(st))
        except Exception as e:  # noqa: BLE001 - one failed reading must not end the probe
            st = None
            emit({"ok": False, "error": f"{type(e).__name__}: {e}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
