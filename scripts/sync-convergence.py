#!/usr/bin/env python3
"""Runs one `strata serve` and three `strata replicate --writable` replicas under writers on every
side, cuts replicas off the network and kills them with SIGKILL at random moments, then heals
everything and checks that the replicas converged.

Each replica reaches the server through a proxy of this script's that can go offline (existing
connections cut, new ones refused): an offline replica keeps serving its local copy and taking
writes, which wait in its outbox. Each replica settles conflicts with its own policy
(server-wins, local-wins, merge-by-property). Writers create authors with unique names and books,
edit a few shared authors and books from every side, and delete some of what they created.

After the schedule every proxy comes back online, every replica runs again, and within a time
limit:
  - every replica serves exactly the server's authors, books and tags (attributes and
    relationships), and holds per object the server's version (its StrataSyncRecord's
    serverVersion equals the server's `_version`; the `_version` a replica serves is its own
    store's);
  - no author name and no book title appears twice on the server (no write applied twice);
  - every author and book whose creation was acknowledged (by the server or a replica) is on the
    server unless a writer deleted it (a book also when a writer deleted its author, whose delete
    cascades), or the replica that acknowledged it reported losing it: `strata replicate` prints a
    line per conflict it settles ("... (the local change lost)") and per local transaction the
    server refuses, and the acknowledged creations a replica lost are at most the losses it
    reported;
  - every replica's outbox is empty (its store's local history is all acknowledged, no `_batch`
    in flight, no key being replaced).

With --postgresql (run under Debian's pg_virtualenv, or with PGHOST, PGPORT, PGUSER, PGPASSWORD and
PGDATABASE set), the server's Catalog store (authors, books, tags) lives in PostgreSQL, one schema
per schedule; --servers 2 runs two servers over that same store (each with its own SQLite Activity
store), the replicas following one or the other, the writers writing through both.

Usage: scripts/sync-convergence.py [--binary .build/debug/strata] [--schedules 5] [--steps 150]
                                   [--seed N] [--kill-server] [--postgresql [--servers 2]] [--jobs N]
Schedule k runs with seed N+k (N random unless given); each schedule's seed is printed, a failed
one keeps its data folder and is named again in the last line. --jobs runs that many schedules at
once (each with its own processes, ports and folder). Exits 1 on failure.
"""

import argparse
import concurrent.futures
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

POLICIES = ["server-wins", "local-wins", "merge-by-property"]


def port_range():
    """Ports below the kernel's ephemeral range: the kernel never hands them out by itself."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return range(max(1024, low - 12000), low)


PORTS = port_range()
next_port = [random.randrange(len(PORTS))]
port_lock = threading.Lock()


def free_port():
    """A free port this harness hands out once: a killed server restarts on its port, so no other
    process, schedule or outgoing connection may take that port meanwhile (a port of the kernel's
    ephemeral range could be)."""
    with port_lock:
        for _ in range(len(PORTS)):
            port = PORTS[next_port[0] % len(PORTS)]
            next_port[0] += 1
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    raise RuntimeError("no free port")


def request(port, method, path, body=None, timeout=10):
    """(status, parsed JSON or None); status 0 when the connection fails."""
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = connection.getresponse()
        data = response.read()
        connection.close()
        try:
            return response.status, json.loads(data) if data else None
        except ValueError:
            return response.status, None
    except (OSError, http.client.HTTPException):
        return 0, None


class Proxy:
    """A TCP forwarder to the server that can go offline."""

    def __init__(self, target):
        self.target = target
        self.online = True
        self.lock = threading.Lock()
        self.sockets = []
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                online = self.online
            if not online:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def set_online(self, online):
        with self.lock:
            self.online = online
            cut = [] if online else self.sockets
            if not online:
                self.sockets = []
        for s in cut:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass


class Node:
    """A `strata` process (serve or replicate) that can be killed and started again."""

    def __init__(self, arguments, folder, port):
        self.arguments = arguments
        self.folder = folder
        self.port = port
        self.process = None
        self.log = open(os.path.join(folder, "process.log"), "ab")

    def start(self):
        self.process = subprocess.Popen(self.arguments, stdout=self.log, stderr=self.log)

    def kill(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    @property
    def running(self):
        return self.process is not None and self.process.poll() is None

    def wait_ready(self, path, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if request(self.port, "GET", path, timeout=2)[0] == 200:
                return True
            time.sleep(0.05)
        return False


def objects(port, resource, versions=None):
    """The objects of a resource by id, without versions (put in `versions` by id when given); None
    when the read fails."""
    status, body = request(port, "GET", f"/{resource}?limit=1000")
    if status != 200:
        return None
    result = {}
    for item in body["items"]:
        item = dict(item)
        version = item.pop("_version", None)
        if versions is not None:
            versions[item["_id"]] = version
        for key, value in item.items():
            if isinstance(value, list):
                item[key] = sorted(value)
        result[item["_id"]] = item
    return result


def replica_store(folder):
    return sqlite3.connect(f"file:{os.path.join(folder, 'default.sqlite')}?mode=ro", uri=True, timeout=10)


def outbox_size(folder):
    """The local transactions a replica's store has not had acknowledged, plus one for a `_batch`
    still in flight or keys still being replaced."""
    db = replica_store(folder)
    try:
        pushed, in_flight, rekeying = db.execute(
            'SELECT "pushedThrough", "inFlight", "rekeying" FROM "StrataSyncState"').fetchone()
        waiting = db.execute(
            "SELECT count(*) FROM _strata_history WHERE number > ? AND coalesce(author, '') != 'strata-sync'",
            (pushed,)).fetchone()[0]
        return waiting + (in_flight is not None) + (rekeying is not None)
    finally:
        db.close()


def server_versions(folder):
    """The server version a replica keeps per object: {(entity, server key): version}."""
    db = replica_store(folder)
    try:
        rows = db.execute('SELECT "entity", "key", "serverVersion" FROM "StrataSyncRecord"').fetchall()
        return {(entity, key): version for entity, key, version in rows}
    finally:
        db.close()


ENTITIES = {"authors": "Author", "books": "Book", "tags": "Tag"}
LOSS = re.compile(r"strata replicate: (conflict: .*\(the local change lost\)|the server refused local transaction)")


def reported_losses(folder):
    """How many local changes a replica reported losing: the lines `strata replicate` printed
    (conflicts lost, transactions refused), or, when a kill -9 came before a line was printed, its
    store's record of each refused transaction (a local transaction of its own, labelled
    "rejected", committed with the settlement)."""
    with open(os.path.join(folder, "process.log"), "rb") as log:
        printed = sum(1 for line in log.read().decode("utf-8", "replace").splitlines() if LOSS.search(line))
    db = replica_store(folder)
    try:
        refused = db.execute("SELECT count(*) FROM _strata_history WHERE context = 'rejected'").fetchone()[0]
    finally:
        db.close()
    return max(printed, refused)


class Schedule:
    """One seeded run: the processes, the writers' record, the checks."""

    def __init__(self, binary, seed, steps, kill_server, postgresql=False, servers=1):
        self.binary = binary
        self.postgresql = postgresql
        self.server_count = servers
        self.rng = random.Random(seed)
        self.seed = seed
        self.steps = steps
        self.kill_server = kill_server
        self.folder = tempfile.mkdtemp(prefix="strata-sync-convergence-")
        self.created = set()  # author names whose creation was acknowledged
        self.deleted = set()  # author names a writer deleted (acknowledged or not)
        self.books = {}  # book title whose creation was acknowledged -> its author's name
        self.acknowledged_by = {}  # author name or book title -> the replica that acknowledged it
        self.counter = 0
        self.problems = []
        self.writes = {}

    def start(self):
        schema = f"sync_{self.seed}_{os.path.basename(self.folder)[-8:]}"
        self.origins = []
        for number in range(self.server_count):
            origin_folder = os.path.join(self.folder, f"origin-{number}")
            os.makedirs(origin_folder)
            port = free_port()
            arguments = [self.binary, "serve", "--port", str(port), "--data-dir", origin_folder]
            if self.postgresql:
                e = os.environ
                base = f"postgresql://{e['PGUSER']}@{e['PGHOST']}:{e['PGPORT']}/{e['PGDATABASE']}"
                # A small pool and a patient connect: several schedules at once (--jobs), each with
                # its servers killed and restarted, stay within the cluster's connections on a
                # loaded machine.
                arguments += ["--store", f"Catalog={base}?schema={schema}&pool=4&connect_timeout=30"]
            node = Node(arguments, origin_folder, port)
            node.start()
            if not node.wait_ready("/ready"):
                raise RuntimeError(f"server {number} did not start")
            self.origins.append(node)
        self.origin = self.origins[0]
        port = self.origin.port
        for index in range(3):
            author = self.create_author(port)
            request(port, "POST", "/books", {"title": f"shared-{index}", "author": author})
        self.replicas = []
        for index in range(3):
            folder = os.path.join(self.folder, f"replica-{index}")
            os.makedirs(folder)
            proxy = Proxy(self.origins[index % len(self.origins)].port)
            replica_port = free_port()
            node = Node([self.binary, "replicate", "--from", f"http://127.0.0.1:{proxy.port}", "--data-dir", folder,
                         "--port", str(replica_port), "--writable", "--wait", "2",
                         "--policy", f"*={POLICIES[index]}"], folder, replica_port)
            node.proxy = proxy
            node.start()
            self.replicas.append(node)
        # The replicas seed at once; each must then serve its copy.
        for index, node in enumerate(self.replicas):
            if not node.wait_ready("/authors"):
                raise RuntimeError(f"replica {index} did not start")

    def create_author(self, port, replica=None):
        self.counter += 1
        name = f"author-{self.seed}-{self.counter}"
        status, body = request(port, "POST", "/authors", {"name": name})
        if status == 201:
            self.created.add(name)
            if replica is not None:
                self.acknowledged_by[name] = replica
            return body["_id"]
        return None

    def send(self, side, port, method, path, body=None):
        status, answer = request(port, method, path, body)
        key = f"{side} {'acknowledged' if 200 <= status < 300 else 'refused'}"
        self.writes[key] = self.writes.get(key, 0) + 1
        return status, answer

    def write(self):
        """One random write on the server or a running replica."""
        targets = [o for o in self.origins if o.running] + [r for r in self.replicas if r.running]
        if not targets:
            return
        node = self.rng.choice(targets)
        port = node.port
        side = "server" if node in self.origins else "replicas"
        replica = self.replicas.index(node) if node in self.replicas else None
        choice = self.rng.random()
        if choice < 0.3:
            self.create_author(port, replica)
            return
        authors = objects(port, "authors")
        if not authors:
            return
        if choice < 0.55:
            shared = sorted(authors)[:3]
            target = self.rng.choice(shared)
            self.send(side, port, "PATCH", f"/authors/{target}", {"email": f"e{self.rng.randrange(1000)}@example.org"})
        elif choice < 0.75:
            author = self.rng.choice(sorted(authors))
            self.counter += 1
            title = f"book-{self.seed}-{self.counter}"
            status, _ = self.send(side, port, "POST", "/books", {"title": title, "author": author,
                                                                  "pages": self.rng.randrange(1, 500)})
            if status == 201:
                self.books[title] = authors[author]["name"]
                if replica is not None:
                    self.acknowledged_by[title] = replica
        elif choice < 0.9:
            books = objects(port, "books")
            if books:
                target = self.rng.choice(sorted(books))
                self.send(side, port, "PATCH", f"/books/{target}", {"pages": self.rng.randrange(1, 500)})
        else:
            shared = set(sorted(authors)[:3])
            mine = [a for a in authors.values() if a["name"].startswith(f"author-{self.seed}-")
                    and a["_id"] not in shared]
            if mine:
                target = self.rng.choice(mine)
                self.deleted.add(target["name"])
                self.send(side, port, "DELETE", f"/authors/{target['_id']}")

    def event(self, pending):
        """A random failure: a replica offline for a while, a replica or the server killed."""
        now = time.time()
        choice = self.rng.random()
        replica = self.rng.choice(self.replicas)
        if choice < 0.5:
            replica.proxy.set_online(False)
            pending.append((now + self.rng.uniform(0.2, 2.0), lambda r=replica: r.proxy.set_online(True)))
        elif choice < 0.85 or not self.kill_server:
            replica.kill()
            pending.append((now + self.rng.uniform(0.1, 1.5), lambda r=replica: r.running or r.start()))
        else:
            origin = self.rng.choice(self.origins)
            origin.kill()
            pending.append((now + self.rng.uniform(0.1, 1.0), lambda o=origin: o.running or o.start()))

    def run(self):
        pending = []
        for _ in range(self.steps):
            now = time.time()
            for due, action in [p for p in pending if p[0] <= now]:
                action()
            pending = [p for p in pending if p[0] > now]
            if self.rng.random() < 0.08:
                self.event(pending)
            else:
                self.write()
        for _, action in pending:
            action()
        for replica in self.replicas:
            replica.proxy.set_online(True)
            if not replica.running:
                replica.start()
        for origin in self.origins:
            if not origin.running:
                origin.start()
        for origin in self.origins:
            origin.wait_ready("/ready")

    def converged(self):
        versions = {}
        server = {r: objects(self.origin.port, r, versions.setdefault(r, {})) for r in ENTITIES}
        if any(v is None for v in server.values()):
            return False, "the server does not answer"
        for index, replica in enumerate(self.replicas):
            for resource, expected in server.items():
                found = objects(replica.port, resource)
                if found != expected:
                    missing = sorted(set(expected or {}) - set(found or {}))
                    extra = sorted(set(found or {}) - set(expected or {}))
                    differing = sorted(k for k in set(expected) & set(found or {}) if expected[k] != found[k])
                    return False, (f"replica {index} {resource}: missing {missing[:5]}, extra {extra[:5]}, "
                                   f"differing {differing[:5]}")
            waiting = outbox_size(replica.folder)
            if waiting:
                return False, f"replica {index}: {waiting} local transactions not acknowledged"
            kept = server_versions(replica.folder)
            for resource, by_id in versions.items():
                wrong = sorted(i for i, v in by_id.items() if kept.get((ENTITIES[resource], i)) != v)
                if wrong:
                    found = [kept.get((ENTITIES[resource], i)) for i in wrong[:5]]
                    expected = [by_id[i] for i in wrong[:5]]
                    return False, (f"replica {index} {resource}: server versions {found} kept for {wrong[:5]}, "
                                   f"the server has {expected}")
        return True, ""

    def check(self, timeout):
        deadline = time.time() + timeout
        reason = ""
        while time.time() < deadline:
            ok, reason = self.converged()
            if ok:
                break
            time.sleep(0.25)
        else:
            self.problems.append(f"not converged within {timeout} s: {reason}")
        names = [a["name"] for a in (objects(self.origin.port, "authors") or {}).values()]
        titles = [b["title"] for b in (objects(self.origin.port, "books") or {}).values()]
        for kind, values in (("authors", names), ("books", titles)):
            doubled = sorted({n for n in values if values.count(n) > 1})
            if doubled:
                self.problems.append(f"{kind} created twice: {doubled[:5]}")
        lost = sorted(self.created - self.deleted - set(names))
        lost += sorted(t for t, author in self.books.items() if author not in self.deleted and t not in titles)
        # A creation a replica acknowledged may have lost a conflict or been refused there
        # (reported); one the server acknowledged never may.
        unexplained = [item for item in lost if item not in self.acknowledged_by]
        for index, replica in enumerate(self.replicas):
            mine = [item for item in lost if self.acknowledged_by.get(item) == index]
            if len(mine) > reported_losses(replica.folder):
                unexplained += mine
        if unexplained:
            self.problems.append(f"acknowledged creations lost: {unexplained[:5]}")

    def stop(self):
        for node in getattr(self, "replicas", []) + getattr(self, "origins", []):
            node.kill()
        for replica in getattr(self, "replicas", []):
            replica.proxy.set_online(False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=".build/debug/strata")
    parser.add_argument("--schedules", type=int, default=5)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--kill-server", action="store_true")
    # Above 30 s: a server killed while answering a push leaves its idempotency claim in a shared
    # PostgreSQL ledger running for 30 s, and the replica's retries wait that long.
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("--servers", type=int, default=1, help="servers over the PostgreSQL store (with --postgresql)")
    parser.add_argument("--postgresql", action="store_true",
                        help="the server's Catalog store in PostgreSQL (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE)")
    parser.add_argument("--jobs", type=int, default=1, help="schedules run at once")
    arguments = parser.parse_args()
    first = arguments.seed if arguments.seed is not None else random.randrange(1 << 32)
    failures = []
    lock = threading.Lock()

    def run(number):
        seed = first + number
        schedule = Schedule(os.path.abspath(arguments.binary), seed, arguments.steps, arguments.kill_server,
                            arguments.postgresql, arguments.servers if arguments.postgresql else 1)
        started = time.time()
        try:
            schedule.start()
            schedule.run()
            schedule.check(arguments.timeout)
        except Exception as error:  # a harness failure is a failed schedule, with its seed
            schedule.problems.append(f"{type(error).__name__}: {error}")
        finally:
            schedule.stop()
        seconds = time.time() - started
        with lock:
            if schedule.problems:
                failures.append(seed)
                print(f"schedule seed {seed}: FAILED in {seconds:.1f} s (data in {schedule.folder})")
                for problem in schedule.problems:
                    print(f"  {problem}")
            else:
                writes = ", ".join(f"{count} {kind}" for kind, count in sorted(schedule.writes.items()))
                print(f"schedule seed {seed}: converged in {seconds:.1f} s; {len(schedule.created)} authors created, "
                      f"other writes: {writes}")
            sys.stdout.flush()
        if not schedule.problems:
            shutil.rmtree(schedule.folder, ignore_errors=True)

    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, arguments.jobs)) as pool:
        list(pool.map(run, range(arguments.schedules)))
    failed = "" if not failures else f"; failed seeds: {' '.join(map(str, sorted(failures)))}"
    print(f"sync convergence: {arguments.schedules} schedules, {len(failures)} failures (first seed {first}) "
          f"in {time.time() - started:.0f} s{failed}")
    return 1 if failures else 0

if __name__ == "__main__":
    sys.exit(main())
