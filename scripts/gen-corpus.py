#!/usr/bin/env python3
"""Write the bad-input corpus replayed by internal/api/corpus_test.go (and grown by `make stress`'s fuzzing).

Each file is one HTTP request: a request line, headers, a blank line, the body (bytes as they are). {{TOKEN}} is
replaced by the server's token at replay time. Every request must get a 4xx in mvp's error shape and write nothing.

Shell metacharacters and traversal are put in every field that restricts them (workload, name, the paths,
override keys, env names). Override and env *values* are free text by design (they never reach a shell: see
specs/api.md), so metacharacters there are not bad input and are not in this corpus.
"""
import json
import os
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "internal", "api", "testdata", "corpus")
os.makedirs(out, exist_ok=True)
for f in os.listdir(out):
    if f.endswith(".http"):
        os.remove(os.path.join(out, f))

n = 0
def req(name, body=b"", method="POST", path="/api/v2/tasks", ctype="application/yaml", auth="Bearer {{TOKEN}}", extra=()):
    global n
    n += 1
    head = [f"{method} {path}"]
    if ctype:
        head.append(f"Content-Type: {ctype}")
    if auth is not None:
        head.append(f"Authorization: {auth}")
    head.extend(extra)
    if isinstance(body, str):
        body = body.encode()
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in name)[:60]
    with open(os.path.join(out, f"{n:03d}-{safe}.http"), "wb") as fh:
        fh.write(("\n".join(head) + "\n\n").encode() + body)

BASE = {"workload": "ppo", "nnodes": 1, "n_gpus_per_node": 4, "model_path": "/m", "train_file": "/t", "val_file": "/v"}
def spec(**kw):
    d = dict(BASE)
    for k, v in kw.items():
        if v is None:
            d.pop(k, None)
        else:
            d[k] = v
    return json.dumps(d)

HOSTILE = ["../../etc/passwd", "/a/../../etc/shadow", "$(id)", "`id`", ";rm -rf /", "| cat /etc/passwd",
           "&& reboot", "> /etc/x", "a\nb", "x" * 5000, "/data/x y", "'quoted'", "\u202eevil", "/ok/$HOME",
           "C:\\windows", "~/x", ""]

# A. hostile strings in every restricted string field
for field in ["workload", "name", "model_path", "train_file", "val_file", "code_path"]:
    for i, v in enumerate(HOSTILE):
        if v == "" and field != "workload":
            continue  # an empty optional field takes its default; empty required ones are the missing-field cases
        req(f"hostile-{field}-{i}", spec(**{field: v}), ctype="application/json")
for i, v in enumerate(HOSTILE):
    req(f"hostile-override-key-{i}", spec(overrides=[f"{v}=1"]), ctype="application/json")
    if v:
        req(f"hostile-env-name-{i}", spec(env={v: "x"}), ctype="application/json")

# B. malformed and hostile YAML/JSON
malformed = {
    "empty": "", "spaces": "   \n\t\n", "unclosed-flow": "workload: [ppo\n", "unclosed-quote": "workload: \"ppo\n",
    "bad-indent": "workload: ppo\n  nnodes: 1\n n_gpus_per_node: 4\n", "tab-indent": "workload: ppo\n\tnnodes: 1\n",
    "bad-escape": "name: \"\\q\"\n", "list-top": "- workload: ppo\n", "scalar-top": "ppo\n", "number-top": "42\n",
    "null-top": "null\n", "two-docs": "workload: ppo\n---\nworkload: sft\n", "dup-key": "workload: ppo\nworkload: sft\n",
    "anchor": "workload: &w ppo\nname: *w\n", "alias-bomb": "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n",
    "deep-100": "x: " + "[" * 100 + "]" * 100 + "\n", "deep-map": "".join("  " * i + f"k{i}:\n" for i in range(60)) + "  " * 60 + "v: 1\n",
    "json-trailing-comma": '{"workload": "ppo",}', "json-comment": '{"workload": "ppo" /* c */}', "json-single-quote": "{'workload': 'ppo'}",
    "json-nan": '{"workload": "ppo", "nnodes": NaN, "n_gpus_per_node": 1}', "json-array": "[]", "json-string": '"ppo"',
    "binary": "\x01\x02\x03\x04", "bom-garbage": "\ufeff\ufeffworkload: ppo\n:::\n", "only-comment": "# nothing\n",
    "colon-key": ": ppo\n", "complex-key": "? [a, b]\n: c\n", "tag-binary": "workload: !!binary cHBv\n",
    "tag-custom": "workload: !mytag ppo\n", "merge-key": "<<: {workload: ppo}\n", "many-nodes": "overrides:\n" + "  - a=1\n" * 12000,
}
for name, body in malformed.items():
    req(f"yaml-{name}", body)
req("nul-byte", "workload: ppo\x00\n")
req("invalid-utf8", b"workload: \xff\xfe\n")
req("huge-body", "# " + "x" * (1 << 20) + "\n")

# C. wrong types
types = {"workload": [["ppo"], {"a": 1}, 1, True], "nnodes": ["two", [1], {"n": 1}, True, 1.5, "1"],
         "n_gpus_per_node": ["four", [4], 4.5], "name": [["a"], {"a": 1}], "model_path": [["/m"], {"p": "/m"}],
         "overrides": ["a=1", {"a": 1}, [["a=1"]], [{"a": 1}], [1]], "env": [["A=1"], "A=1", {"A": ["1"]}, {"A": {"b": 1}}]}
for field, vals in types.items():
    for i, v in enumerate(vals):
        req(f"type-{field}-{i}", spec(**{field: v}), ctype="application/json")

# D. out-of-range numbers and missing required fields
for field, vals in {"nnodes": [0, -1, 65, 10**9, 2**63, -(2**63)], "n_gpus_per_node": [0, -4, 17, 10**12]}.items():
    for v in vals:
        req(f"range-{field}-{v}", spec(**{field: v}), ctype="application/json")
for field in ["workload", "nnodes", "n_gpus_per_node", "model_path", "train_file", "val_file"]:
    req(f"missing-{field}", spec(**{field: None}), ctype="application/json")
req("unknown-field", spec(nnode=2), ctype="application/json")
req("override-sets-nnodes", spec(overrides=["trainer.nnodes=8"]), ctype="application/json")
req("override-sets-gpus", spec(overrides=["++trainer.n_gpus_per_node=8"]), ctype="application/json")
req("too-many-overrides", spec(overrides=["a=1"] * 201), ctype="application/json")
req("too-many-env", spec(env={f"V{i}": "x" for i in range(101)}), ctype="application/json")
req("env-reserved-ray", spec(env={"RAY_ADDRESS": "x"}), ctype="application/json")
req("env-reserved-mvp", spec(env={"MVP_TASK_ID": "x"}), ctype="application/json")
req("env-value-too-big", spec(env={"A": "x" * 40000}), ctype="application/json")

# E. bad headers
good = spec()
for i, auth in enumerate([None, "", "Bearer", "Bearer wrong-token-wrong", "Basic dXNlcjpwYXNz", "bearer{{TOKEN}}",
                          "Bearer {{TOKEN}}x", "Token {{TOKEN}}", "Bearer  "]):
    req(f"auth-{i}", good, auth=auth)
for i, ct in enumerate(["text/html", "application/xml", "multipart/form-data; boundary=x", "image/png", ";;;",
                        "application/x-www-form-urlencoded"]):
    req(f"content-type-{i}", good, ctype=ct)

# F. wrong methods
tid = "mvp2-ppo-20251223-143201-7f3a"
for method, path in [("PUT", "/api/v2/tasks"), ("DELETE", "/api/v2/tasks"), ("PATCH", "/api/v2/tasks"),
                     ("DELETE", f"/api/v2/tasks/{tid}"), ("PUT", f"/api/v2/tasks/{tid}"), ("POST", f"/api/v2/tasks/{tid}"),
                     ("GET", f"/api/v2/tasks/{tid}/cancel"), ("PUT", f"/api/v2/tasks/{tid}/cancel"),
                     ("POST", f"/api/v2/tasks/{tid}/logs"), ("DELETE", f"/api/v2/tasks/{tid}/events"),
                     ("POST", "/healthz"), ("DELETE", "/api/v2/openapi.json"), ("TRACE", "/api/v2/tasks"),
                     ("OPTIONS", "/api/v2/tasks")]:
    req(f"method-{method}-{path}", "", method=method, path=path, ctype=None)

# G. bad parameters and cursors
for q in ["state=DONE", "state=queued", "workload=dpo", "limit=0", "limit=-1", "limit=501", "limit=abc", "limit=1e3",
          "cursor=!!!", "cursor=Zm9v", "cursor=" + "A" * 300, "cursor=OnRhc2s", "cursor=%00", "cursor=OjA"]:
    req(f"list-{q}", "", method="GET", path=f"/api/v2/tasks?{q}", ctype=None)
for q in ["cursor=!!!", "cursor=LTE", "limit=0", "limit=1001", "limit=x"]:
    req(f"events-{q}", "", method="GET", path=f"/api/v2/tasks/{tid}/events?{q}", ctype=None)
for q in ["attempt=0", "attempt=x", "attempt=1000", "follow=maybe"]:
    req(f"logs-{q}", "", method="GET", path=f"/api/v2/tasks/{tid}/logs?{q}", ctype=None)
for q in ["dry_run=maybe", "dry_run=2"]:
    req(f"create-{q}", good, path=f"/api/v2/tasks?{q}")

# H. unknown or hostile task ids
for i, p in enumerate([f"/api/v2/tasks/{tid}", "/api/v2/tasks/..%2F..%2Fetc%2Fpasswd", "/api/v2/tasks/%00",
                       "/api/v2/tasks/mvp2-ppo-20251223-143201-7F3A", "/api/v2/tasks/" + "a" * 500,
                       f"/api/v2/tasks/{tid}%3Bid/cancel", "/api/v2/tasks/$(id)/logs", "/api/v3/tasks", "/admin", "/api/v2/tasks/x/y/z"]):
    req(f"path-{i}", "", method="GET", path=p, ctype=None)

print(f"wrote {n} requests to {out}")
