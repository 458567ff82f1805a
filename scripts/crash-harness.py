#!/usr/bin/env python3
"""Kills `strata serve` with SIGKILL while it writes, restarts it, and checks what survived.

Random mode (the default): the example model (Catalog and Activity stores). Several connections
stream `POST /_batch` requests that create an Author (Catalog) and a SearchLog (Activity) with the
same marker, single `POST /tags`, and books created, patched and deleted (with patches of the
batches' search logs); the server is killed at a random moment, restarted on the same data folder,
and checked:
  - every acknowledged write is present (batches: both objects; tags);
  - no batch is half applied (each marker has both objects or neither, acknowledged or not);
  - every store file passes PRAGMA integrity_check;
  - the server is ready again (GET /ready is 200);
  - the history feed (`GET /_changes`, followed from the previous cycle's `next` and, on the
    last cycle, paged again from the start to the same changes) agrees with the stores: every
    acknowledged create, patch and delete is in it; each object's changes run insert (version 1),
    updates (one version up each), at most one delete (of the last version), nothing after it; an
    object's last change is its stored version, a deleted object is gone, and every stored object
    has its changes in the feed.

Deterministic mode (--points): a debug build's STRATA_CRASH_AT kills the server at a chosen point
of a save across three stores (after the commit point, between the other commits) and of the
recovery after it; after a restart without it the save must be complete, and the history feed
must show each store's part once. Then the same batch with an Idempotency-Key, the server killed
after its save and before the ledger kept its answer: the retry must be answered from the save's
receipt, with nothing saved twice.

With --postgresql (run under Debian's pg_virtualenv, or with PGHOST, PGPORT, PGUSER, PGPASSWORD and
PGDATABASE set), the first configuration of each model lives in PostgreSQL: the Catalog of the random
mode, the Orders of the crash points, so the saves cross a PostgreSQL and SQLite stores.

Usage: scripts/crash-harness.py [--binary .build/debug/strata] [--cycles 20] [--seed N] [--points]
                                [--postgresql]
Prints one line per cycle and ends with "crash harness: N cycles, N failures"; exits 1 on failure.
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
import urllib.parse
import uuid


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One `strata serve` process on a data folder."""

    def __init__(self, binary, data, port, model=None, env=None, stores=()):
        self.port = port
        args = [binary, "serve", "--port", str(port), "--data-dir", data]
        if model:
            args += ["--model", model]
        for store in stores:
            args += ["--store", store]
        self.log = open(os.path.join(data, "server.log"), "ab")
        environment = dict(os.environ)
        environment.pop("STRATA_CRASH_AT", None)
        environment.update(env or {})
        self.process = subprocess.Popen(args, stdout=self.log, stderr=self.log, env=environment)

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/ready")
                if c.getresponse().status == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.02)
        return False

    def kill(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.log.close()

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def request(connection, method, path, body=None):
    data = json.dumps(body) if body is not None else None
    connection.request(method, path, body=data, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, response.read()


class Ledger:
    """What the writers were told."""

    def __init__(self):
        self.lock = threading.Lock()
        self.batches = set()  # acknowledged markers
        self.tags = set()
        self.changes = []  # acknowledged (entity, _id, op, _version)
        self.books = set()  # acknowledged books no delete was sent for
        self.logs = []  # acknowledged search logs

    def add(self, kind, marker):
        with self.lock:
            (self.batches if kind == "batch" else self.tags).add(marker)

    def acknowledged(self, entity, identifier, op, version):
        with self.lock:
            self.changes.append((entity, identifier, op, version))
            if entity == "Book" and op == "insert":
                self.books.add(identifier)
            if entity == "SearchLog" and op == "insert":
                self.logs.append(identifier)

    def summary(self):
        ops = [change[2] for change in self.changes]
        return "acknowledged %d creates, %d patches, %d deletes" % (
            ops.count("insert"), ops.count("update"), ops.count("delete"))

    def pick_book(self, rng, deleting):
        """A book to patch, or to delete (then no one is sent another write for it)."""
        with self.lock:
            if not self.books:
                return None
            book = rng.choice(sorted(self.books))
            if deleting:
                self.books.discard(book)
            return book

    def pick_log(self, rng):
        with self.lock:
            return rng.choice(self.logs) if self.logs else None


def mutate(connection, ledger, rng):
    """One write of the mutating writer: a book created, patched or deleted, or a search log patched."""
    dice = rng.random()
    book = ledger.pick_book(rng, deleting=0.6 <= dice < 0.8) if dice >= 0.35 else None
    if dice >= 0.8:
        log = ledger.pick_log(rng)
        if log is not None:
            status, body = request(connection, "PATCH", "/search-logs/%d" % log, {"results": rng.randrange(1000)})
            if status == 200:
                ledger.acknowledged("SearchLog", log, "update", json.loads(body)["_version"])
    elif book is None:
        status, body = request(connection, "POST", "/books", {"title": "k-" + uuid.uuid4().hex[:12], "year": 2000})
        if status == 201:
            ledger.acknowledged("Book", json.loads(body)["_id"], "insert", 1)
    elif dice < 0.6:
        status, body = request(connection, "PATCH", "/books/%d" % book, {"rating": rng.randrange(6)})
        if status == 200:
            ledger.acknowledged("Book", book, "update", json.loads(body)["_version"])
    else:
        status, _ = request(connection, "DELETE", "/books/%d" % book)
        if status == 204:
            ledger.acknowledged("Book", book, "delete", None)


def writer(port, ledger, stop, kind):
    connection = None
    rng = random.Random()  # the writers' timing is not reproducible anyway; the seed drives the kills
    while not stop.is_set():
        marker = uuid.uuid4().hex[:12]
        try:
            if connection is None:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            if kind == "batch":
                status, body = request(connection, "POST", "/_batch", {"operations": [
                    {"method": "POST", "path": "/authors", "body": {"name": "b-" + marker}},
                    {"method": "POST", "path": "/search-logs", "body": {"query": "b-" + marker}},
                ]})
                if status == 200:
                    ledger.add("batch", marker)
                    author, log = (result["body"]["_id"] for result in json.loads(body)["results"])
                    ledger.acknowledged("Author", author, "insert", 1)
                    ledger.acknowledged("SearchLog", log, "insert", 1)
            elif kind == "tag":
                status, body = request(connection, "POST", "/tags", {"name": "t-" + marker})
                if status == 201:
                    ledger.add("tag", marker)
                    ledger.acknowledged("Tag", json.loads(body)["_id"], "insert", 1)
            else:
                mutate(connection, ledger, rng)
        except (OSError, http.client.HTTPException):
            connection = None
            time.sleep(0.005)


class PostgreSQL:
    """The server of the environment (pg_virtualenv's variables), one schema per data folder."""

    def __init__(self):
        e = os.environ
        self.base = "postgresql://%s@%s:%s/%s" % (e["PGUSER"], e["PGHOST"], e["PGPORT"], e["PGDATABASE"])

    def store(self, configuration, schema):
        return "%s=%s?schema=%s" % (configuration, self.base, schema)

    def query(self, sql):
        out = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
                             capture_output=True, text=True, check=True).stdout
        return [line for line in out.split("\n") if line]


def schema_for(data):
    return "crash_" + os.path.basename(data).replace("-", "_").lower()


def read_only(path):
    return sqlite3.connect("file:%s?mode=ro" % path, uri=True)


def integrity(path):
    if not os.path.exists(path):
        return "missing"
    with read_only(path) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0]


def stored_versions(data, pg=None):
    """(entity, _id) -> _version of every object the example's stores hold."""
    stored = {}
    if pg:
        for entity in ("Author", "Book", "Tag"):
            for row in pg.query('SELECT "_pk", "_version" FROM "%s"."%s"' % (schema_for(data), entity)):
                pk, version = row.split("|")
                stored[(entity, int(pk))] = int(version)
    else:
        with read_only(os.path.join(data, "catalog.sqlite")) as db:
            for entity in ("Author", "Book", "Tag"):
                for pk, version in db.execute('SELECT "_pk", "_version" FROM "%s"' % entity):
                    stored[(entity, pk)] = version
    with read_only(os.path.join(data, "activity.sqlite")) as db:
        for pk, version in db.execute('SELECT "_pk", "_version" FROM "SearchLog"'):
            stored[("SearchLog", pk)] = version
    return stored


def read_feed(port, since=None):
    """The changes of `GET /_changes` after `since` (None: from the start), paged until `next`
    stops moving, and the last `next`."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    changes = []
    while True:
        path = "/_changes?limit=1000" + ("&since=" + urllib.parse.quote(since, safe="") if since else "")
        status, body = request(connection, "GET", path)
        if status != 200:
            raise RuntimeError("GET %s answered %d: %s" % (path, status, body[:200]))
        page = json.loads(body)
        changes += page["changes"]
        if page["next"] == since:
            return changes, since
        since = page["next"]


def change_key(change):
    return (change["entity"], change["_id"], change["op"], change["_version"])


def follow_feed(port, feed, from_start):
    """Extends `feed` ({"changes": [...], "next": token or None}) with the changes after its
    token, a token kept across the kill and the restart; with `from_start` the feed is also read
    from the start and must hold the same changes. Returns the problems."""
    changes, feed["next"] = read_feed(port, feed["next"])
    feed["changes"] += changes
    if not from_start:
        return []
    whole, _ = read_feed(port)
    if sorted(map(change_key, whole)) != sorted(map(change_key, feed["changes"])):
        return ["the feed read from the start (%d changes) differs from the feed followed across the restarts (%d)"
                % (len(whole), len(feed["changes"]))]
    return []


def check_feed(changes, stored, ledger):
    """The feed against the stores and against what the writers were told."""
    problems = []
    steps = {}  # (entity, _id) -> [(op, _version)] in feed order
    for change in changes:
        steps.setdefault((change["entity"], change["_id"]), []).append((change["op"], change["_version"]))
    for key, history in sorted(steps.items()):
        name = "%s %d" % key
        if history[0] != ("insert", 1):
            problems.append("the feed's first change of %s is %s, not an insert of version 1" % (name, history[0]))
        for (op, version), (previous_op, previous) in zip(history[1:], history):
            if previous_op == "delete":
                problems.append("the feed has %s %s of version %d after its delete" % (op, name, version))
            elif op == "update" and version != previous + 1:
                problems.append("the feed has %s going from version %d to %d" % (name, previous, version))
            elif op == "delete" and version != previous:
                problems.append("the feed deletes version %d of %s, whose last is %d" % (version, name, previous))
            elif op == "insert":
                problems.append("the feed inserts %s again" % name)
        op, version = history[-1]
        if op == "delete" and key in stored:
            problems.append("the feed deletes %s, which the store holds at version %d" % (name, stored[key]))
        elif op != "delete" and stored.get(key) != version:
            problems.append("the feed's last change of %s is version %d; the store holds %s" % (name, version, stored.get(key)))
    for key in sorted(set(stored) - set(steps)):
        problems.append("the store holds %s %d (version %d); the feed has no change of it" % (key + (stored[key],)))
    seen = {(c["entity"], c["_id"], c["op"], c["_version"] if c["op"] != "delete" else None) for c in changes}
    for entity, identifier, op, version in ledger.changes:
        if (entity, identifier, op, version) not in seen:
            problems.append("acknowledged %s of %s %d (version %s) is not in the feed" % (op, entity, identifier, version))
    return problems


def check_example(data, ledger, pg=None):
    problems = []
    catalog = os.path.join(data, "catalog.sqlite")
    activity = os.path.join(data, "activity.sqlite")
    for path in (activity,) if pg else (catalog, activity):
        result = integrity(path)
        if result != "ok":
            problems.append("%s: integrity_check says %s" % (os.path.basename(path), result))
    if pg:
        schema = schema_for(data)
        def names(table, column, prefix):
            return {row[2:] for row in pg.query(
                "SELECT convert_from(\"%s\", 'UTF8') FROM \"%s\".\"%s\" WHERE convert_from(\"%s\", 'UTF8') LIKE '%s%%'"
                % (column, schema, table, column, prefix))}
        authors = names("Author", "name", "b-")
        tags = names("Tag", "name", "t-")
    else:
        with read_only(catalog) as db:
            authors = {row[0][2:] for row in db.execute("SELECT name FROM Author WHERE name LIKE 'b-%'")}
            tags = {row[0][2:] for row in db.execute("SELECT name FROM Tag WHERE name LIKE 't-%'")}
    with read_only(activity) as db:
        logs = {row[0][2:] for row in db.execute("SELECT query FROM SearchLog WHERE query LIKE 'b-%'")}
    for marker in sorted(ledger.batches - (authors & logs)):
        problems.append("acknowledged batch %s is missing (author %s, log %s)"
                        % (marker, marker in authors, marker in logs))
    for marker in sorted(authors ^ logs):
        problems.append("batch %s is half applied (author %s, log %s)" % (marker, marker in authors, marker in logs))
    for marker in sorted(ledger.tags - tags):
        problems.append("acknowledged tag %s is missing" % marker)
    return problems, len(authors & logs), len(tags)


def random_cycles(binary, cycles, rng, connections, pg=None):
    failures = 0
    recoveries = 0
    data = tempfile.mkdtemp(prefix="strata-crash-")
    stores = [pg.store("Catalog", schema_for(data))] if pg else []
    ledger = Ledger()
    feed = {"changes": [], "next": None}
    for cycle in range(1, cycles + 1):
        port = free_port()
        server = Server(binary, data, port, stores=stores)
        if not server.wait_ready():
            print("cycle %d: FAILED: the server did not become ready after the restart" % cycle)
            server.kill()
            failures += 1
            break
        stop = threading.Event()
        kinds = ("tag", "batch", "mutate", "batch", "batch", "mutate")
        threads = [threading.Thread(target=writer, args=(port, ledger, stop, kinds[i % len(kinds)]))
                   for i in range(connections)]
        for thread in threads:
            thread.start()
        time.sleep(rng.uniform(0.05, 0.8))
        server.kill()
        stop.set()
        for thread in threads:
            thread.join()
        # Restart: recovery runs before /ready answers 200.
        port = free_port()
        log_size = os.path.getsize(os.path.join(data, "server.log"))
        server = Server(binary, data, port, stores=stores)
        ready = server.wait_ready()
        with open(os.path.join(data, "server.log"), "rb") as f:
            f.seek(log_size)
            recovered = sum(1 for line in f if b"recovery: finished" in line)
        problems, batches, tags = check_example(data, ledger, pg)
        if not ready:
            problems.append("the server did not become ready after the restart")
        else:
            try:
                problems += follow_feed(port, feed, from_start=cycle == cycles)
                problems += check_feed(feed["changes"], stored_versions(data, pg), ledger)
            except (OSError, http.client.HTTPException, RuntimeError, ValueError, KeyError) as error:
                problems.append("reading the history feed failed: %s" % error)
        server.stop()
        status = "ok" if not problems else "FAILED"
        recoveries += recovered
        print("cycle %d: %s: %d acknowledged batches, %d tags acknowledged; stores hold %d batches, %d tags; "
              "%s in a feed of %d changes%s"
              % (cycle, status, len(ledger.batches), len(ledger.tags), batches, tags, ledger.summary(), len(feed["changes"]),
                 "; the restart finished an interrupted batch" if recovered else ""))
        for problem in problems[:10]:
            print("    " + problem)
        if problems:
            failures += 1
    print("random kills: %d of %d restarts finished a batch the kill had interrupted between its stores"
          % (recoveries, cycles))
    return failures


THREE_STORES = {
    "name": "Ledger", "version": "1",
    "entities": [
        {"name": "Order", "attributes": [{"name": "code", "type": "string"}]},
        {"name": "Audit", "attributes": [{"name": "code", "type": "string"}]},
        {"name": "Gauge", "attributes": [{"name": "code", "type": "string"}]},
    ],
    "configurations": [
        {"name": "Orders", "entities": ["Order"]},
        {"name": "Audits", "entities": ["Audit"]},
        {"name": "Gauges", "entities": ["Gauge"]},
    ],
}


def point_cycles(binary, pg=None):
    """Each crash point of a save across three stores, and a crash during the recovery after it."""
    failures = 0
    scenarios = [("after-commit-point", None), ("between-commits", None),
                 ("after-commit-point", "during-recovery")]
    for cycle, (point, recovery_point) in enumerate(scenarios, 1):
        data = tempfile.mkdtemp(prefix="strata-crash-point-")
        model = os.path.join(data, "ledger.json")
        with open(model, "w") as f:
            json.dump(THREE_STORES, f)
        problems = []
        feed = []
        stores = [pg.store("Orders", schema_for(data))] if pg else []

        def count(name, table, marker=None):
            if pg and name == "orders":
                where = " WHERE convert_from(code, 'UTF8') = '%s'" % marker if marker else ""
                return int(pg.query('SELECT count(*) FROM "%s"."%s"%s' % (schema_for(data), table, where))[0])
            with read_only(os.path.join(data, name + ".sqlite")) as db:
                if marker:
                    return db.execute('SELECT count(*) FROM "%s" WHERE code = ?' % table, (marker,)).fetchone()[0]
                return db.execute('SELECT count(*) FROM "%s"' % table).fetchone()[0]

        port = free_port()
        server = Server(binary, data, port, model=model, env={"STRATA_CRASH_AT": point}, stores=stores)
        if not server.wait_ready():
            problems.append("the server did not start")
        marker = uuid.uuid4().hex[:12]
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            status, _ = request(c, "POST", "/_batch", {"operations": [
                {"method": "POST", "path": "/orders", "body": {"code": marker}},
                {"method": "POST", "path": "/audits", "body": {"code": marker}},
                {"method": "POST", "path": "/gauges", "body": {"code": marker}},
            ]})
            problems.append("the batch was answered %d: the server did not stop at %s" % (status, point))
        except (OSError, http.client.HTTPException):
            pass  # killed where it was told
        server.process.wait()
        server.log.close()
        if server.process.returncode != -signal.SIGKILL:
            problems.append("the server ended with %s, not SIGKILL" % server.process.returncode)
        counts = {}
        for name in ("orders", "audits", "gauges"):
            counts[name] = count(name, {"orders": "Order", "audits": "Audit", "gauges": "Gauge"}[name])
        if recovery_point:
            port = free_port()
            server = Server(binary, data, port, model=model, env={"STRATA_CRASH_AT": recovery_point}, stores=stores)
            server.process.wait()
            server.log.close()
            if server.process.returncode != -signal.SIGKILL:
                problems.append("the recovery did not stop at %s (%s)" % (recovery_point, server.process.returncode))
        port = free_port()
        server = Server(binary, data, port, model=model, stores=stores)
        if not server.wait_ready():
            problems.append("the server did not become ready after the restart")
        else:
            # The history feed shows each store's part once, the recovered parts included.
            stored = {}
            for name, table in (("orders", "Order"), ("audits", "Audit"), ("gauges", "Gauge")):
                if pg and name == "orders":
                    rows = [row.split("|") for row in pg.query('SELECT "_pk", "_version" FROM "%s"."%s"' % (schema_for(data), table))]
                else:
                    with read_only(os.path.join(data, name + ".sqlite")) as db:
                        rows = db.execute('SELECT "_pk", "_version" FROM "%s"' % table).fetchall()
                stored.update({(table, int(pk)): int(version) for pk, version in rows})
            try:
                feed, _ = read_feed(port)
                problems += check_feed(feed, stored, Ledger())
            except (OSError, http.client.HTTPException, RuntimeError, ValueError, KeyError) as error:
                problems.append("reading the history feed failed: %s" % error)
        server.stop()
        finished = {}
        for name, table in (("orders", "Order"), ("audits", "Audit"), ("gauges", "Gauge")):
            path = os.path.join(data, name + ".sqlite")
            if not (pg and name == "orders") and integrity(path) != "ok":
                problems.append("%s fails integrity_check" % name)
            finished[name] = count(name, table, marker)
        if set(finished.values()) != {1}:
            problems.append("after the restart the save is %s" % finished)
        if sorted(counts.values()) == [1, 1, 1] or sorted(counts.values()) == [0, 0, 0]:
            problems.append("the crash left %s: it did not stop between the commits" % counts)
        with open(os.path.join(data, "server.log"), "rb") as f:
            if b"recovery: finished 1 interrupted save" not in f.read():
                problems.append("the server log does not say what the recovery finished")
        label = point + (" then " + recovery_point if recovery_point else "")
        print("point %d (%s%s): %s: left %s, after restart %s, %d changes in the feed"
              % (cycle, label, ", Orders in PostgreSQL" if pg else "", "ok" if not problems else "FAILED", counts, finished,
                 len(feed)))
        for problem in problems:
            print("    " + problem)
        if problems:
            failures += 1
    return failures, len(scenarios)


def receipt_cycles(binary, pg=None):
    """A `_batch` across the three stores sent with an Idempotency-Key, the server killed after
    the save committed and before the ledger kept its answer (and, second, right after the commit
    point): the retry with the key after a restart is answered from the save's receipt (200,
    Idempotent-Replayed, the stored objects' IDs), nothing is saved twice, and a third send
    gets the same bytes."""
    failures = 0
    for cycle, point in enumerate(("before-idempotency-answer", "after-commit-point"), 1):
        data = tempfile.mkdtemp(prefix="strata-crash-receipt-")
        model = os.path.join(data, "ledger.json")
        with open(model, "w") as f:
            json.dump(THREE_STORES, f)
        problems = []
        stores = [pg.store("Orders", schema_for(data))] if pg else []
        marker = uuid.uuid4().hex[:12]
        key = "receipt-" + marker
        batch = {"operations": [
            {"method": "POST", "path": "/orders", "body": {"code": marker}},
            {"method": "POST", "path": "/audits", "body": {"code": marker}},
            {"method": "POST", "path": "/gauges", "body": {"code": marker}},
        ]}

        def send():
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("POST", "/_batch", body=json.dumps(batch),
                      headers={"Content-Type": "application/json", "Idempotency-Key": key})
            response = c.getresponse()
            return response.status, response.getheader("Idempotent-Replayed"), response.read()

        def stored(name, table):
            if pg and name == "orders":
                return [int(row) for row in pg.query(
                    'SELECT "_pk" FROM "%s"."%s" WHERE convert_from(code, \'UTF8\') = \'%s\''
                    % (schema_for(data), table, marker))]
            with read_only(os.path.join(data, name + ".sqlite")) as db:
                return [row[0] for row in db.execute('SELECT "_pk" FROM "%s" WHERE code = ?' % table, (marker,))]

        port = free_port()
        server = Server(binary, data, port, model=model, env={"STRATA_CRASH_AT": point}, stores=stores)
        if not server.wait_ready():
            problems.append("the server did not start")
        try:
            status, _, _ = send()
            problems.append("the batch was answered %d: the server did not stop at %s" % (status, point))
        except (OSError, http.client.HTTPException):
            pass  # killed where it was told
        server.process.wait()
        server.log.close()
        if server.process.returncode != -signal.SIGKILL:
            problems.append("the server ended with %s, not SIGKILL" % server.process.returncode)
        port = free_port()
        server = Server(binary, data, port, model=model, stores=stores)
        if not server.wait_ready():
            problems.append("the server did not become ready after the restart")
        else:
            status, replayed, body = send()
            keys = {}
            for name, table in (("orders", "Order"), ("audits", "Audit"), ("gauges", "Gauge")):
                keys[table] = stored(name, table)
            if status != 200 or replayed != "true":
                problems.append("the retry was answered %d (replayed: %s): %s" % (status, replayed, body[:300]))
            else:
                results = json.loads(body)["results"]
                ids = [result.get("body", {}).get("_id") for result in results]
                statuses = [result.get("status") for result in results]
                expected = [keys[t][0] if len(keys[t]) == 1 else None for t in ("Order", "Audit", "Gauge")]
                if statuses != [201, 201, 201] or ids != expected:
                    problems.append("the replayed results %s %s name other objects than the stored %s"
                                    % (statuses, ids, keys))
            if any(len(found) != 1 for found in keys.values()):
                problems.append("after the retry the stores hold %s objects of the batch, not one each" % keys)
            again = send()
            if again[0] != status or again[2] != body:
                problems.append("a third send was answered otherwise (%d)" % again[0])
        server.stop()
        print("receipt %d (killed at %s%s): %s" % (cycle, point, ", Orders in PostgreSQL" if pg else "",
                                                   "ok" if not problems else "FAILED"))
        for problem in problems:
            print("    " + problem)
        if problems:
            failures += 1
    return failures, 2


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/debug/strata")
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--connections", type=int, default=6)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--points", action="store_true", help="also run the deterministic crash points")
    parser.add_argument("--postgresql", action="store_true",
                        help="the first configuration in PostgreSQL (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    pg = PostgreSQL() if args.postgresql else None
    print("crash harness: %s, seed %d%s" % (args.binary, seed, ", Catalog and Orders in PostgreSQL" if pg else ""))
    rng = random.Random(seed)
    failures = random_cycles(args.binary, args.cycles, rng, args.connections, pg)
    cycles = args.cycles
    if args.points:
        point_failures, points = point_cycles(args.binary, pg)
        failures += point_failures
        cycles += points
        receipt_failures, receipts = receipt_cycles(args.binary, pg)
        failures += receipt_failures
        cycles += receipts
    print("crash harness: %d cycles, %d failures" % (cycles, failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
