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
    relationships; versions are each store's own);
  - no author name appears twice on the server (no write applied twice);
  - every author whose creation was acknowledged (by the server or a replica) and that no writer
    deleted is on the server (no acknowledged write lost);
  - every replica's outbox is empty (its store's local history is all acknowledged).

With --postgresql (run under Debian's pg_virtualenv, or with PGHOST, PGPORT, PGUSER, PGPASSWORD and
PGDATABASE set), the server's Catalog store (authors, books, tags) lives in PostgreSQL, one schema
per schedule; --servers 2 runs two servers over that same store (each with its own SQLite Activity
store), the replicas following one or the other, the writers writing through both.

Usage: scripts/sync-convergence.py [--binary .build/debug/strata] [--schedules 5] [--steps 150]
                                   [--seed N] [--kill-server] [--postgresql [--servers 2]]
The seed of each schedule is printed; a failure names it. Exits 1 on failure.
"""

import argparse
import http.client
import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

POLICIES = ["server-wins", "local-wins", "merge-by-property"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def objects(port, resource):
    """The objects of a resource by id, without versions; None when the read fails."""
    status, body = request(port, "GET", f"/{resource}?limit=1000")
    if status != 200:
        return None
    result = {}
    for item in body["items"]:
        item = dict(item)
        item.pop("_version", None)
        for key, value in item.items():
            if isinstance(value, list):
                item[key] = sorted(value)
        result[item["_id"]] = item
    return result


def outbox_size(folder):
    """The local transactions a replica's store has not had acknowledged."""
    db = sqlite3.connect(f"file:{os.path.join(folder, 'default.sqlite')}?mode=ro", uri=True, timeout=10)
    try:
        pushed = db.execute('SELECT "pushedThrough" FROM "StrataSyncState"').fetchone()[0]
        return db.execute(
            "SELECT count(*) FROM _strata_history WHERE number > ? AND coalesce(author, '') != 'strata-sync'",
            (pushed,)).fetchone()[0]
    finally:
        db.close()


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
                arguments += ["--store", f"Catalog={base}?schema={schema}"]
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
            if not node.wait_ready("/authors"):
                raise RuntimeError(f"replica {index} did not start")
            self.replicas.append(node)

    def create_author(self, port):
        self.counter += 1
        name = f"author-{self.seed}-{self.counter}"
        status, body = request(port, "POST", "/authors", {"name": name})
        if status == 201:
            self.created.add(name)
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
        choice = self.rng.random()
        if choice < 0.3:
            self.create_author(port)
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
            self.send(side, port, "POST", "/books", {"title": f"book-{self.seed}-{self.counter}", "author": author,
                                             "pages": self.rng.randrange(1, 500)})
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
        server = {r: objects(self.origin.port, r) for r in ("authors", "books", "tags")}
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
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            self.problems.append(f"authors created twice: {doubled[:5]}")
        lost = sorted(self.created - self.deleted - set(names))
        if lost:
            self.problems.append(f"acknowledged authors lost: {lost[:5]}")

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
    # Above 120 s: a server killed while answering a push leaves its idempotency claim in a shared
    # PostgreSQL ledger running for 120 s, and the replica waits that long before a new key.
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("--servers", type=int, default=1, help="servers over the PostgreSQL store (with --postgresql)")
    parser.add_argument("--postgresql", action="store_true",
                        help="the server's Catalog store in PostgreSQL (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE)")
    arguments = parser.parse_args()
    first = arguments.seed if arguments.seed is not None else random.randrange(1 << 32)
    failures = 0
    for number in range(arguments.schedules):
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
        if schedule.problems:
            failures += 1
            print(f"schedule seed {seed}: FAILED in {seconds:.1f} s (data in {schedule.folder})")
            for problem in schedule.problems:
                print(f"  {problem}")
        else:
            writes = ", ".join(f"{count} {kind}" for kind, count in sorted(schedule.writes.items()))
            print(f"schedule seed {seed}: converged in {seconds:.1f} s; {len(schedule.created)} authors created, "
                  f"other writes: {writes}")
    print(f"sync convergence: {arguments.schedules} schedules, {failures} failures (first seed {first})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
