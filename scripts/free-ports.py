#!/usr/bin/env python3
"""Print N distinct free TCP ports on 127.0.0.1, one per line, avoiding Ray's worker port range 10002-19999."""
import socket
import sys

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
