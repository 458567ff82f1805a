#!/usr/bin/env python3
"""Fails the PostgreSQL primary over under two `strata serve` processes while clients write.

Starts a pg_auto_failover formation in a temporary folder, on loopback ports chosen at run time: a
monitor, a primary and a synchronous secondary (`pg_autoctl create monitor`, then `pg_autoctl create
postgres --run` twice, as the `postgres` user when run as root, since initdb refuses root). Two
servers (the debug build, each with its own data folder) keep the example model's Catalog in the
formation through one libpq multi-host URI with target_session_attrs=read-write; the authority form
(`postgresql://postgres@h:p1,h:p2/strata?…`) is tried first, and the query form (`?host=h,h&port=p1,p2`)
when the server refuses it, which counts as a failure. Six clients create authors with a marker of
their own and a unique `Idempotency-Key` each, with a 75 s timeout per request (a server holds a
write whose commit's answer was lost until it knows, durably, whether it committed: up to 60 s),
sending the same key again to the other server after a 503, a 409, a connection error or a timeout,
until a 2xx answers.

While they write, three events in turn, each followed by a wait for primary + secondary again:
  kill -9     SIGKILL to the primary's postmaster (its pid from postmaster.pid); again if its keeper
              restarted it in place before the monitor saw it down (see Harness.promotion);
  clean stop  `pg_autoctl stop` of the primary node (postgres shut down, the node gone); once the
              other node is promoted, `pg_autoctl run` brings it back as the secondary;
  switchover  `pg_autoctl perform switchover`.
For each: when the monitor shows the other node promoted, and the longest time without any
acknowledged write from the event on (the write path's unavailability).

Then checks, each a failure when violated (and, before the events, that the primary's
synchronous_standby_names makes the secondary synchronous):
  - every acknowledged write is in the primary exactly once, and no marker is there twice;
  - no answer was a 5xx other than 503, and every 503 carried Retry-After; no write was refused
    with a 4xx other than 409 (in flight);
  - no request hung past its timeout; both servers still run;
  - writes succeed again after each event, within 15 s (--resume-within) of the promotion (how
    soon pg_auto_failover promotes is its own doing);
  - a write retried with the same Idempotency-Key on the other server replays the first answer
    (Idempotent-Replayed: true, same status and body) and is stored once.
Everything it started is stopped and the folder removed at the end, whatever happened.

Usage: scripts/failover-check.py [--binary .build/debug/strata] [--clients 6] [--timeout 75] [--keep]
Needs pg_autoctl and the pgautofailover extension of an installed PostgreSQL (Debian:
pg-auto-failover-cli and postgresql-NN-auto-failover); without them it fails under CI=true and is
skipped, saying so, elsewhere. STRATA_PG_BIN names the PostgreSQL binaries' folder. Prints one line
per event and check, and ends with "failover harness: 3 events, N failures, N s"; exits 1 on failure.
"""

import argparse
import collections
import glob
import http.client
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

STABLE = ("primary", "secondary")
PROMOTED = ("wait_primary", "primary")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def skip_or_fail(reason):
    if os.environ.get("CI") == "true":
        sys.exit("FAILED: the failover harness: " + reason)
    print("*** SKIPPED: the failover harness: %s; under CI=true this fails ***" % reason, flush=True)
    sys.exit(0)


def postgres_bin():
    """The binaries of a PostgreSQL that has the pgautofailover extension installed."""
    if os.environ.get("STRATA_PG_BIN"):
        return os.environ["STRATA_PG_BIN"]
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True):
        major = folder.split("/")[-2]
        if os.path.exists("/usr/share/postgresql/%s/extension/pgautofailover.control" % major):
            return folder
    return None


class Formation:
    """A pg_auto_failover monitor and two Postgres nodes in one folder, run as the postgres user."""

    def __init__(self, root, bindir):
        self.root = root
        self.bindir = bindir
        self.processes = []  # every pg_autoctl started, each the leader of its own process group
        self.monitor_port = free_port()
        self.monitor_uri = "postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable" % self.monitor_port
        self.nodes = {}  # name -> (pgdata, port)
        as_root = os.geteuid() == 0
        self.prefix = ["runuser", "-u", "postgres", "--"] if as_root else []
        if as_root:
            entry = pwd.getpwnam("postgres")
            os.chown(root, entry.pw_uid, entry.pw_gid)
        # pg_autoctl keeps its configuration and state under the XDG folders and its pid files in
        # XDG_RUNTIME_DIR: all of it in the folder, so nothing outlives the run. PG_REGRESS_SOCK_DIR
        # (pg_autoctl's own variable) puts every Postgres socket there too.
        self.env = {
            "HOME": root, "XDG_CONFIG_HOME": root + "/config", "XDG_DATA_HOME": root + "/share",
            "XDG_RUNTIME_DIR": root + "/run", "PG_REGRESS_SOCK_DIR": root + "/sock", "PGHOST": root + "/sock",
            "PATH": bindir + ":/usr/bin:/bin", "LANG": "C.UTF-8",
        }

    def command(self, *args):
        return self.prefix + ["env", "-i"] + ["%s=%s" % kv for kv in self.env.items()] + list(args)

    def start(self, name, *args):
        log = open(os.path.join(self.root, name + ".log"), "ab")
        process = subprocess.Popen(self.command(*args), stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        log.close()
        self.processes.append(process)
        return process

    def run(self, *args, timeout=60):
        return subprocess.run(self.command(*args), capture_output=True, text=True, timeout=timeout)

    def create(self):
        for folder in ("run", "sock"):  # pg_autoctl creates the XDG folders itself
            os.makedirs(os.path.join(self.root, folder))
        if self.prefix:
            subprocess.run(["chown", "-R", "postgres:", self.root], check=True)
        monitor = self.start("monitor", "pg_autoctl", "create", "monitor", "--pgctl", self.bindir + "/pg_ctl",
                             "--pgdata", self.root + "/monitor", "--pgport", str(self.monitor_port),
                             "--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl", "--run")
        wait_for(lambda: running(monitor, "monitor") and self.state() is not None, 60, "the monitor to answer")
        for name in ("node1", "node2"):
            self.nodes[name] = (self.root + "/" + name, free_port())
            node = self.start_node(name, create=True)
            wanted = ("single",) if name == "node1" else STABLE
            wait_for(lambda: running(node, name) and self.states_are(wanted), 90, "%s to join the formation" % name)
            if name == "node1":
                # A base backup (the secondary's, or a rejoining node's when pg_rewind cannot
                # serve) starts with a spread checkpoint, paced over most of checkpoint_timeout
                # whenever buffers are dirty: the copy of template1 is written out first, and
                # checkpoint_timeout (which the base backup carries to the secondary) is 30 s.
                uri = "postgresql://postgres@127.0.0.1:%d/postgres" % self.nodes[name][1]
                psql(self.bindir, uri, "CREATE DATABASE strata")
                psql(self.bindir, uri, "ALTER SYSTEM SET checkpoint_timeout = '30s'")
                psql(self.bindir, uri, "SELECT pg_reload_conf()")
                psql(self.bindir, uri, "CHECKPOINT")

    def start_node(self, name, create=False):
        pgdata, port = self.nodes[name]
        if not create:
            return self.start(name, "pg_autoctl", "run", "--pgdata", pgdata)
        # Both nodes take part in the write quorum with number_sync_standbys 0: the primary's
        # synchronous_standby_names is 'ANY 1 (…)', so a commit is acknowledged once the secondary
        # has it.
        return self.start(name, "pg_autoctl", "create", "postgres", "--pgctl", self.bindir + "/pg_ctl",
                          "--pgdata", pgdata, "--pgport", str(port), "--listen", "127.0.0.1",
                          "--hostname", "127.0.0.1", "--name", name,
                          "--auth", "trust", "--no-ssl", "--replication-quorum", "true",
                          "--candidate-priority", "50", "--monitor", self.monitor_uri, "--run")

    def state(self):
        """[(node name, reported state, assigned state)], or None when the monitor does not answer."""
        try:
            # By the monitor's URI: with --pgdata it would create the XDG folders of the monitor's
            # configuration as well, racing `pg_autoctl create monitor` doing the same.
            out = self.run("pg_autoctl", "show", "state", "--monitor", self.monitor_uri, "--json", timeout=10)
        except subprocess.TimeoutExpired:
            return None
        if out.returncode != 0:
            return None
        try:
            return [(r["nodename"], r["current_group_state"], r["assigned_group_state"]) for r in json.loads(out.stdout or "[]")]
        except (ValueError, KeyError, TypeError):
            return None

    def states_are(self, wanted):
        state = self.state() or []
        return all(r == a for _, r, a in state) and sorted(r for _, r, _ in state) == sorted(wanted)

    def primary(self):
        return next((n for n, r, a in self.state() or [] if r in PROMOTED and a in PROMOTED), None)

    def stop(self):
        """pg_autoctl stop for every node and the monitor, then SIGKILL to whatever is left."""
        for pgdata in [p for p, _ in self.nodes.values()] + [self.root + "/monitor"]:
            if os.path.exists(pgdata):
                try:
                    self.run("pg_autoctl", "stop", "--pgdata", pgdata, timeout=20)
                except subprocess.TimeoutExpired:
                    pass
        deadline = time.monotonic() + 20
        while any(p.poll() is None for p in self.processes) and time.monotonic() < deadline:
            time.sleep(0.1)
        for process in self.processes:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait()
        # A postmaster outside those groups (none is expected): its pid file names it.
        for pgdata in [p for p, _ in self.nodes.values()] + [self.root + "/monitor"]:
            kill_postmaster(pgdata)


def running(process, name):
    if process.poll() is not None:
        raise RuntimeError("pg_autoctl of the %s ended with exit %d" % (name, process.returncode))
    return True


def accepts(port):
    """Whether something accepts connections on the loopback port."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def kill_postmaster(pgdata):
    """SIGKILL to the postmaster of pgdata, if one runs (its pid file names it); its pid, or None."""
    try:
        with open(os.path.join(pgdata, "postmaster.pid")) as f:
            pid = int(f.readline().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if pgdata.encode() + b"\0" not in f.read():
                return None
        os.kill(pid, signal.SIGKILL)
        return pid
    except (OSError, ValueError):
        return None


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.25)
    raise RuntimeError("timed out after %d s waiting for %s" % (seconds, what))


class Server:
    """One `strata serve` on a data folder of its own."""

    def __init__(self, binary, data, store, env):
        os.makedirs(data, exist_ok=True)
        self.port = free_port()
        self.log_path = os.path.join(data, "server.log")
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen([binary, "serve", "--port", str(self.port), "--data-dir", data,
                                         "--store", store], stdout=log, stderr=log, env=env,
                                        stdin=subprocess.DEVNULL)
        log.close()

    def wait_ready(self, seconds=60):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/ready")
                if c.getresponse().status == 200:
                    return True
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.05)
        return False

    def log_tail(self, lines=5):
        with open(self.log_path, "rb") as f:
            return [l.decode(errors="replace").rstrip() for l in f.readlines()[-lines:]]

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def post(port, path, body, key, timeout):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", path, body=body, headers={"Content-Type": "application/json", "Idempotency-Key": key})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def retry_after(headers):
    try:
        return max(0.0, float(headers.get("retry-after", "1")))
    except ValueError:
        return 1.0


class Clients:
    """Writer threads creating authors, each write retried with its key until a 2xx answers it."""

    def __init__(self, ports, count, timeout):
        self.ports = ports
        self.timeout = timeout
        self.phase = "before the events"
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.outcomes = collections.defaultdict(collections.Counter)  # phase -> answer -> count
        self.acknowledged = {}  # marker -> (monotonic time of its 2xx, its attempts, the 2xx's body)
        self.began = time.monotonic()
        self.answer_times = []  # monotonic times of every 2xx, in order
        self.hung = []  # (phase, port, seconds) of requests past their timeout
        self.bad = []  # (phase, port, status, body head) of 5xx but 503, 503 without Retry-After, other 4xx
        self.threads = [threading.Thread(target=self.write, args=(i,), daemon=True) for i in range(count)]

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(self.timeout + 5)

    def count(self, phase, outcome):
        with self.lock:
            self.outcomes[phase][outcome] += 1

    def acknowledged_since(self, moment):
        with self.lock:
            return sum(1 for t in self.answer_times[-1000:] if t > moment)

    def write(self, index):
        attempt = index  # half the clients start on each server
        while not self.stopping.is_set():
            marker = "fo-%d-%s" % (index, uuid.uuid4().hex[:16])
            key = uuid.uuid4().hex
            body = json.dumps({"name": marker})
            attempts = []  # (port, answer) of each try, for the report of a write found missing
            while not self.stopping.is_set():
                port = self.ports[attempt % len(self.ports)]
                attempt += 1
                sent = time.monotonic()
                try:
                    status, headers, data = post(port, "/authors", body, key, self.timeout)
                except TimeoutError:
                    attempts.append((port, "timeout"))
                    phase = self.phase
                    self.count(phase, "timeout")
                    with self.lock:
                        self.hung.append((phase, port, time.monotonic() - sent))
                    continue
                except (OSError, http.client.HTTPException):
                    attempts.append((port, "connection error"))
                    self.count(self.phase, "connection error")
                    self.stopping.wait(0.1)
                    continue
                answered = time.monotonic()
                phase = self.phase  # the answer counts where it arrives: a kill fails requests sent before it
                self.count(phase, status)
                attempts.append((port, "%d%s during %s at %.1f s" % (
                    status, " replayed" if headers.get("idempotent-replayed") else "", phase, answered - self.began)))
                if 200 <= status < 300:
                    with self.lock:
                        self.acknowledged[marker] = (answered, attempts, data[:200].decode(errors="replace"))
                        self.answer_times.append(answered)
                    break
                if (status >= 500 and status != 503) or (status == 503 and "retry-after" not in headers) \
                        or status not in (409, 503) and status < 500:
                    with self.lock:
                        self.bad.append((phase, port, status, data[:300].decode(errors="replace")))
                if status in (409, 503):
                    self.stopping.wait(min(retry_after(headers), 1.0))
                elif status >= 500:
                    self.stopping.wait(0.1)
                else:
                    break  # a refusal the harness did not expect: this write is given up

    def outage(self, start, end):
        """The longest stretch in [start, end] without a 2xx, in seconds after start, and whether a 2xx
        ended it (rather than the end of the window)."""
        with self.lock:
            times = [t for t in self.answer_times if start <= t <= end]
        longest, ended, previous = (0.0, 0.0), True, start
        for t, answered in [(t, True) for t in times] + [(end, False)]:
            if t - previous > longest[1] - longest[0]:
                longest, ended = (previous - start, t - start), answered
            previous = t
        return longest, ended


def psql(bindir, uri, sql):
    out = subprocess.run([bindir + "/psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                          "-d", uri, "-c", sql], capture_output=True, text=True, timeout=60, env=clean_env())
    if out.returncode != 0:
        raise RuntimeError("psql: " + out.stderr.strip())
    return [line.split("\t") for line in out.stdout.split("\n") if line]


def clean_env():
    """This environment without libpq's and Strata's own variables, which would change the stores."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PG", "STRATA_"))}


class Harness:
    """The run's checks: each printed as it is decided, the failed ones counted."""

    def __init__(self, args, root, bindir):
        self.args = args
        self.root = root
        self.bindir = bindir
        self.failures = []
        self.formation = Formation(root, bindir)
        self.servers = []
        self.clients = None
        self.uri = None

    def check(self, ok, name, detail=""):
        print(("ok: " if ok else "FAILED: ") + name + (" (%s)" % detail if detail else ""), flush=True)
        if not ok:
            self.failures.append(name)
        return ok

    def check_synchronous(self):
        """The primary waits for the secondary at commit: a quorum of one over the standbys."""
        port = self.formation.nodes[self.formation.primary()][1]
        uri = "postgresql://postgres@127.0.0.1:%d/strata" % port
        names = psql(self.bindir, uri, "SHOW synchronous_standby_names")[0][0]
        states = [r[0] for r in psql(self.bindir, uri, "SELECT sync_state FROM pg_stat_replication")]
        self.check(names != "" and states and all(s in ("sync", "quorum") for s in states),
                   "the formation replicates synchronously",
                   "synchronous_standby_names %s, standbys %s" % (names, ", ".join(states) or "none"))

    def start_servers(self):
        (_, p1), (_, p2) = self.formation.nodes["node1"], self.formation.nodes["node2"]
        authority = "postgresql://postgres@127.0.0.1:%d,127.0.0.1:%d/strata?target_session_attrs=read-write" % (p1, p2)
        query = "postgresql://postgres@/strata?host=127.0.0.1,127.0.0.1&port=%d,%d&target_session_attrs=read-write" % (p1, p2)
        env = clean_env()
        first = Server(self.args.binary, self.root + "/strata-a", "Catalog=" + authority, env)
        self.servers.append(first)
        self.uri = authority
        if not first.wait_ready():
            said = " / ".join(first.log_tail(2))
            first.stop()
            self.servers.remove(first)
            self.check(False, "a multi-host URI in the authority form is accepted (%s)" % authority, said)
            print("    the servers run with the query form: " + query)
            self.uri = query
            self.servers.append(Server(self.args.binary, self.root + "/strata-a", "Catalog=" + query, env))
        else:
            self.check(True, "a multi-host URI in the authority form is accepted", authority)
        self.servers.append(Server(self.args.binary, self.root + "/strata-b", "Catalog=" + self.uri, env))
        for server in self.servers:
            if not server.wait_ready():
                raise RuntimeError("strata serve on port %d did not become ready: %s"
                                   % (server.port, " / ".join(server.log_tail(3))))

    def cause(self, name, old):
        """Starts the event; returns what it did and, for the switchover, its running command."""
        pgdata = self.formation.nodes[old][0]
        if name == "kill -9":
            pid = kill_postmaster(pgdata)
            if pid is None:
                raise RuntimeError("no postmaster of %s to kill" % old)
            return "SIGKILL to %s's postmaster (pid %d)" % (old, pid), None
        if name == "clean stop":
            out = self.formation.run("pg_autoctl", "stop", "--pgdata", pgdata)
            return "pg_autoctl stop of %s (exit %d)" % (old, out.returncode), None
        process = self.formation.start("switchover", "pg_autoctl", "perform", "switchover", "--pgdata", pgdata)
        return "pg_autoctl perform switchover from %s" % old, process

    def promotion(self, name, old, start):
        """Waits for another node promoted: (its name, when the event that led to it began), or
        (None, start).

        After a kill -9 the node's keeper restarts Postgres at once, and the monitor fails over only
        when the keeper reported it down first; else the primary is back in place. Then, once it
        has served for 3 s, its postmaster is killed again (5 times at most), as a primary that
        keeps crashing, until the monitor fails over. Only a postmaster that has finished starting
        is killed: pg_autoctl's services do not always recover from a kill during a start-up."""
        pgdata, port = self.formation.nodes[old]
        kills, up_since = 1, None
        while time.monotonic() < start + 150:
            state = self.formation.state() or []
            new = next((n for n, r, a in state if r in PROMOTED and a in PROMOTED and n != old), None)
            if new:
                return new, start
            if name == "kill -9" and kills < 5:
                failing_over = any(n != old and a != "secondary" for n, _, a in state)
                back = (old, "primary", "primary") in state and accepts(port)
                up_since = (up_since or time.monotonic()) if back and not failing_over else None
                if up_since and time.monotonic() - up_since >= 3 and kill_postmaster(pgdata):
                    kills, up_since, start = kills + 1, None, time.monotonic()
                    print("kill -9: the keeper restarted %s's Postgres in place, nothing failed over: killed again"
                          % old, flush=True)
            time.sleep(0.25)
        return None, start

    def event(self, name):
        """One event while the clients write; False when the formation did not recover from it."""
        old = self.formation.primary()
        moment = time.monotonic()
        try:
            wait_for(lambda: self.clients.acknowledged_since(moment) >= 5, 30, "writes before the event")
        except RuntimeError as error:
            self.check(False, "%s: writes flow before the event" % name, str(error))
        self.clients.phase = name
        start = time.monotonic()
        what, command = self.cause(name, old)
        new, start = self.promotion(name, old, start)
        promoted = time.monotonic() - start if new else None
        if promoted is None:
            return self.check(False, "%s: another node is promoted within 150 s of the %s" % (name, what))
        if name == "clean stop":
            self.formation.start_node(old)
        try:
            wait_for(lambda: self.formation.states_are(STABLE), 120, "primary + secondary again")
        except RuntimeError as error:
            self.check(False, "%s: the formation is whole again" % name,
                       "%s; the monitor says %s" % (error, self.formation.state()))
            self.logs()
            return False
        whole = time.monotonic()
        while time.monotonic() < whole + self.args.resume_within and self.clients.acknowledged_since(whole) < 5:
            time.sleep(0.1)
        end = time.monotonic()
        self.clients.phase = "after " + name
        (stopped, resumed), ended = self.clients.outage(start, end)
        outcomes = ", ".join("%s×%d" % kv for kv in sorted(self.clients.outcomes[name].items(), key=str))
        print("%s: %s; %s promoted after %.1f s, the formation whole again after %.1f s; no write acknowledged "
              "from +%.1f s to +%.1f s; answers meanwhile: %s"
              % (name, what, new, promoted, whole - start, stopped, resumed, outcomes), flush=True)
        if command is not None:
            try:
                command.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
            self.check(command.returncode == 0, "%s: pg_autoctl perform switchover succeeded" % name,
                       "exit %s" % command.returncode)
        # How long the formation takes to promote is pg_auto_failover's (its health checks, its
        # timeouts, its keeper's retries); from then on it is the servers'.
        bound = self.args.resume_within
        if not ended:
            self.check(False, "%s: writes succeed again" % name,
                       "none acknowledged within %d s of the formation being whole" % bound)
        else:
            self.check(resumed - promoted <= bound, "%s: writes succeed again within %d s of the promotion" % (name, bound),
                       "unavailable %.1f s: writes succeeded again %.1f s after the %s, the promotion showed at %.1f s"
                       % (resumed - stopped, resumed, name, promoted))
        return True

    def replay_across_servers(self):
        """A write retried with its key on the other server gets the first answer again."""
        marker = "replay-" + uuid.uuid4().hex[:16]
        key = uuid.uuid4().hex
        body = json.dumps({"name": marker})
        a, b = self.servers[0].port, self.servers[1].port
        first = post(a, "/authors", body, key, self.args.timeout)
        again = post(b, "/authors", body, key, self.args.timeout)
        replayed = again[1].get("idempotent-replayed")
        ok = 200 <= first[0] < 300 and again[0] == first[0] and replayed == "true" and again[2] == first[2]
        self.check(ok, "a retry with the same Idempotency-Key on the other server replays the first answer",
                   "first %d on :%d; the retry on :%d: %d, Idempotent-Replayed %s, %s body"
                   % (first[0], a, b, again[0], replayed or "absent", "the same" if again[2] == first[2] else "another"))
        return marker

    def check_stored(self, replay_marker):
        """What the primary holds against what the clients were told."""
        rows = psql(self.bindir, self.uri, "SELECT table_schema, data_type FROM information_schema.columns "
                    "WHERE table_name = 'Author' AND column_name = 'name'")
        if len(rows) != 1:
            return self.check(False, "the primary holds one Author table", "found %s" % rows)
        schema, kind = rows[0]
        name = "convert_from(name, 'UTF8')" if kind == "bytea" else "name"
        stored = collections.Counter()
        for marker, count in psql(self.bindir, self.uri, "SELECT %s, count(*) FROM \"%s\".\"Author\" WHERE %s LIKE 'fo-%%' "
                                  "OR %s LIKE 'replay-%%' GROUP BY 1" % (name, schema, name, name)):
            stored[marker] = int(count)
        acknowledged = self.clients.acknowledged
        missing = sorted(m for m in acknowledged if stored[m] == 0)
        twice = sorted(m for m, n in stored.items() if n > 1 and m.startswith("fo-"))
        self.check(not missing, "every acknowledged write is in the primary",
                   "%d acknowledged, %d stored, %d missing%s" % (len(acknowledged), sum(1 for m in stored if m.startswith("fo-")),
                                                                 len(missing), ": " + ", ".join(missing[:5]) if missing else ""))
        for marker in missing[:5]:
            _, attempts, body = acknowledged[marker]
            try:
                key = int(json.loads(body)["_id"])
                row = psql(self.bindir, self.uri, "SELECT %s FROM \"%s\".\"Author\" WHERE _pk = %d" % (name, schema, key))
            except (ValueError, KeyError, TypeError, RuntimeError) as error:
                key, row = None, str(error)
            print("    %s: %s; the answer's _id %s holds %s" % (
                marker, ", ".join(":%d %s" % a for a in attempts), key, row or "no row"))
        self.check(not twice, "no write is stored twice",
                   "%d markers stored more than once%s" % (len(twice), ": " + ", ".join(twice[:5]) if twice else ""))
        if replay_marker:
            self.check(stored[replay_marker] == 1, "the write retried on the other server is stored once",
                       "stored %d times" % stored[replay_marker])

    def check_answers(self):
        clients = self.clients
        for phase, outcomes in clients.outcomes.items():
            print("answers %s: %s" % (phase, ", ".join("%s×%d" % kv for kv in sorted(outcomes.items(), key=str))))
        def listed(items):
            kinds = collections.Counter((phase, status) for phase, _, status, _ in items)
            samples = {}  # one of each kind of answer (status and the body's first words)
            for phase, port, status, body in items:
                if len(samples) < 4:
                    samples.setdefault((status, body[:40]), "%d on :%d during %s: %s" % (status, port, phase, body.strip()[:200]))
            return "; ".join("%s during %s ×%d" % (s, p, n) for (p, s), n in sorted(kinds.items(), key=str)) + \
                "".join("\n    e.g. " + sample for sample in samples.values())
        errors = [b for b in clients.bad if b[2] >= 500 and b[2] != 503]
        bare = [b for b in clients.bad if b[2] == 503]
        other = [b for b in clients.bad if b[2] < 500]
        self.check(not errors, "no answer is a 5xx other than 503", listed(errors) if errors else "")
        self.check(not bare, "every 503 carries Retry-After", listed(bare) if bare else "")
        self.check(not other, "no write is refused (4xx other than 409)", listed(other) if other else "")
        self.check(not clients.hung, "no request hangs past its %d s timeout" % self.args.timeout,
                   "%d timed out: %s" % (len(clients.hung), ", ".join(sorted(set("%s on :%d" % h[:2] for h in clients.hung))))
                   if clients.hung else "")
        for server in self.servers:
            self.check(server.process.poll() is None, "strata serve on :%d still runs" % server.port,
                       "" if server.process.poll() is None else "exit %s: %s" % (server.process.returncode,
                                                                             " / ".join(server.log_tail(3))))

    def run(self):
        self.formation.create()
        print("formation: monitor on :%d, %s" % (self.formation.monitor_port, ", ".join(
            "%s on :%d" % (n, p) for n, (_, p) in sorted(self.formation.nodes.items()))), flush=True)
        self.check_synchronous()
        self.start_servers()
        print("servers: :%d and :%d, Catalog=%s" % (self.servers[0].port, self.servers[1].port, self.uri), flush=True)
        self.clients = Clients([s.port for s in self.servers], self.args.clients, self.args.timeout)
        for thread in self.clients.threads:
            thread.start()
        for name in ("kill -9", "clean stop", "switchover"):
            if not self.event(name):
                break
        self.clients.phase = "after the events"
        replay_marker = self.replay_across_servers()
        self.clients.stop()
        self.check_stored(replay_marker)
        self.check_answers()

    def close(self):
        if self.clients:
            self.clients.stop()
        for server in self.servers:
            server.stop()
        self.formation.stop()

    def logs(self):
        for name in [n for n in ("monitor", "node1", "node2") if os.path.exists(os.path.join(self.root, n + ".log"))]:
            with open(os.path.join(self.root, name + ".log"), "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()[-12:]
            print("  %s.log, last lines:\n%s" % (name, "\n".join("    " + l for l in lines)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/debug/strata", help="the strata to serve with")
    parser.add_argument("--clients", type=int, default=6, help="writer threads")
    parser.add_argument("--timeout", type=int, default=75, help="seconds a request may take")
    parser.add_argument("--resume-within", type=int, default=15,
                        help="seconds after the promotion within which writes must succeed again")
    parser.add_argument("--keep", action="store_true", help="keep the folder (logs, data) at the end")
    args = parser.parse_args()
    args.binary = os.path.abspath(args.binary)
    if not os.access(args.binary, os.X_OK):
        sys.exit("FAILED: the failover harness: %s is missing; run swift build first" % args.binary)
    if not shutil.which("pg_autoctl"):
        skip_or_fail("no pg_autoctl on PATH (apt-get install pg-auto-failover-cli postgresql-NN-auto-failover)")
    bindir = postgres_bin()
    if not bindir:
        skip_or_fail("no PostgreSQL with the pgautofailover extension (apt-get install postgresql-NN-auto-failover)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            sys.exit("FAILED: the failover harness runs Postgres as the postgres user, and there is none")
        if not shutil.which("runuser"):
            sys.exit("FAILED: the failover harness runs Postgres as the postgres user, and runuser is missing")
    # A SIGTERM or SIGINT still stops everything started (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    started = time.monotonic()
    root = tempfile.mkdtemp(prefix="strata-failover-")
    harness = Harness(args, root, bindir)
    print("failover harness: %s, PostgreSQL in %s, %d clients, %d s request timeout"
          % (args.binary, bindir, args.clients, args.timeout), flush=True)
    try:
        harness.run()
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        harness.check(False, "the harness ran to its end", str(error))
        harness.logs()
    finally:
        harness.close()
        if args.keep:
            print("failover harness: the logs are kept in " + root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print("failover harness: 3 events, %d failures, %.0f s" % (len(harness.failures), time.monotonic() - started))
    sys.exit(1 if harness.failures else 0)


if __name__ == "__main__":
    main()
