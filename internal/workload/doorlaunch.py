# mvp's launcher for a Ray-door entrypoint that is not one plain Python command: python3 -c "$MVP_DOOR_LAUNCHER" CMD.
# Ray 2.60 stops a job by signalling its entrypoint's process and the children it lists at that instant; a driver
# the shell starts a moment later is missed and runs on with no parent while Ray says STOPPED. This process is the
# entrypoint (exec'd), runs CMD with /bin/sh -c in its own process group (the group Ray's supervisor made for it),
# and on SIGTERM or SIGINT passes the signal to every process of the group, including those started after it came,
# until all have ended; past the stop wait Ray gives (RAY_JOB_STOP_WAIT_TIME_S, less a second) it kills them. It
# ends as the shell would: with CMD's exit code, or killed by the signal that killed the shell (exit code 128 + N
# where signal N is blocked).
import os
import signal
import subprocess
import sys
import time

got = []
armed = [False]


class Stop(Exception):
    pass


def on(sig, _):
    got.append(sig)
    if armed[0]:
        armed[0] = False
        raise Stop()


for s in (signal.SIGTERM, signal.SIGINT):
    signal.signal(s, on)


def members(p):
    """The live processes of this process group but this one (Linux's /proc; elsewhere the shell alone)."""
    me, g, out = os.getpid(), os.getpgid(0), set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return {p.pid} if p.poll() is None else set()
    for d in names:
        if d.isdigit() and int(d) != me:
            try:
                with open("/proc/" + d + "/stat") as f:
                    st = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if st[0] != "Z" and int(st[2]) == g:
                out.add(int(d))
    return out


env = dict(os.environ)
env.pop("MVP_DOOR_LAUNCHER", None)
p = subprocess.Popen(["/bin/sh", "-c", sys.argv[1]], env=env)
try:
    armed[0] = not got
    if got:
        raise Stop()
    p.wait()
except Stop:
    sig, told = got[0], set()
    try:
        wait = float(os.environ.get("RAY_JOB_STOP_WAIT_TIME_S") or 3)
    except ValueError:
        wait = 3
    end = time.monotonic() + max(wait - 1, 0.5)
    while True:
        late = time.monotonic() >= end
        ms = members(p)
        for pid in ms if late else ms - told:
            try:
                os.kill(pid, signal.SIGKILL if late else sig)
            except OSError:
                pass
            told.add(pid)
        if p.poll() is not None and not ms:
            break
        time.sleep(0.05)
rc = p.wait()
if rc < 0:
    try:
        signal.signal(-rc, signal.SIG_DFL)
    except (OSError, ValueError):
        pass  # SIGKILL and SIGSTOP have no handler to reset
    os.kill(os.getpid(), -rc)
    time.sleep(0.1)
sys.exit(128 - rc if rc < 0 else rc)
