#!/usr/bin/env python3
"""free-ports.py [N] — print N distinct free TCP ports on 127.0.0.1, one per line, avoiding Ray's worker port range
10002-19999.
free-ports.py --block N [--avoid P,P-Q…] — print the first port of a block of N consecutive ports that are free now and lie below the
kernel's ephemeral port range (net.ipv4.ip_local_port_range) and above Ray's worker ports, so that no outgoing
connection can take one of them before the listener that is meant for it binds (Ray's dashboard agents bind a
block of ports per node; in the ephemeral range a gRPC client's socket sometimes held one first, and that node's
agent then ran without its HTTP server, so no job could be submitted). --avoid names ports that are chosen but not
bound yet (ray-up's GCS, dashboard and client ports): a block holding one of them made Ray refuse to start.
free-ports.py --free P — exit 0 when a server could listen on port P now on 127.0.0.1 and 0.0.0.0, 1 when not."""
import random
import socket
import sys


def free(port):
    for host in ("127.0.0.1", "0.0.0.0"):
        s = socket.socket()
        try:
            s.bind((host, port))
        except OSError:
            return False
        finally:
            s.close()
    return True


def block(n, avoid=()):
    try:
        low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    lo, hi = 20000, low - n  # above Ray's worker ports, below the ephemeral range
    starts = list(range(lo, hi, n))
    random.shuffle(starts)
    for base in starts:
        if all(base + k not in avoid and free(base + k) for k in range(n)):
            return base
    sys.exit(f"free-ports.py: no block of {n} free ports between {lo} and {low}")


def listenable(port):
    """Whether a server could listen on port now, as Ray's do (SO_REUSEADDR: connections of a stopped cluster
    still in TIME_WAIT do not hold the port)."""
    for host in ("127.0.0.1", "0.0.0.0"):
        s = socket.socket()
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
            s.listen(1)
        except OSError:
            return False
        finally:
            s.close()
    return True


if len(sys.argv) > 2 and sys.argv[1] == "--free":
    sys.exit(0 if listenable(int(sys.argv[2])) else 1)

if len(sys.argv) > 2 and sys.argv[1] == "--block":
    avoid = set()
    if len(sys.argv) > 4 and sys.argv[3] == "--avoid":
        for part in filter(None, sys.argv[4].split(",")):  # P or P-Q
            lo_p, _, hi_p = part.partition("-")
            avoid.update(range(int(lo_p), int(hi_p or lo_p) + 1))
    print(block(int(sys.argv[2]), avoid))
    sys.exit(0)

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1
socks, ports = [], []
while len(ports) < n:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    socks.append(s)
    if 10002 <= p <= 19999 or p in ports:
        continue
    ports.append(p)
for s in socks:
    s.close()
print("\n".join(map(str, ports)))
