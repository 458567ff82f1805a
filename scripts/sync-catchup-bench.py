#!/usr/bin/env python3
"""Measures how long a replica that was offline takes to catch up with N changes on the server.

Starts `strata serve` on a temporary folder, seeds a replica (`strata replicate --once`), writes N
changes on the server while the replica is away (single-object POSTs, one transaction each, over
several keep-alive connections; or --bulk: `POST /authors/_bulk` of 1,000 objects per transaction),
then times `strata replicate --once` catching up, and prints one table row.

With --follow N instead: a replica runs (`strata replicate --port 0`, serving its copy) while N
writes are made on the server one after another; each write's lag is the time from the server's
answer until the replica serves the object; prints p50, p99 and the largest.

Usage: scripts/sync-catchup-bench.py [--binary .build/release/strata] [--changes 100000] [--bulk]
       scripts/sync-catchup-bench.py [--binary .build/release/strata] --follow 500
"""

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/ready")
            if c.getresponse().status == 200:
                return True
        except OSError:
            time.sleep(0.05)
    return False


def write(port, changes, bulk, connections=4):
    counter = iter(range(changes // 1000 if bulk else changes))
    lock = threading.Lock()

    def worker():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while True:
            with lock:
                n = next(counter, None)
            if n is None:
                return
            if bulk:
                body = json.dumps([{"name": f"bulk-{n}-{i}"} for i in range(1000)])
                c.request("POST", "/authors/_bulk", body=body, headers={"Content-Type": "application/json",
                                                                          "Prefer": "return=minimal"})
            else:
                c.request("POST", "/authors", body=json.dumps({"name": f"single-{n}"}),
                          headers={"Content-Type": "application/json", "Prefer": "return=minimal"})
            response = c.getresponse()
            response.read()
            assert response.status == 201, response.status

    threads = [threading.Thread(target=worker) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def follow(binary, port, folder, writes):
    """The replica's lag behind `writes` sequential creations on the server."""
    log = open(os.path.join(folder, "replica.log"), "ab")
    replica = subprocess.Popen([binary, "replicate", "--from", f"http://127.0.0.1:{port}", "--data-dir",
                                os.path.join(folder, "follower"), "--port", "0", "--wait", "25"],
                               stdout=log, stderr=subprocess.PIPE, text=True)
    try:
        served = None
        while served is None:
            line = replica.stderr.readline()
            if not line:
                break
            if "serving the replica on http://" in line:
                served = int(line.strip().rsplit(":", 1)[1])
        # The rest of its messages go unread into the pipe's buffer: a thread drains them.
        threading.Thread(target=lambda: [None for _ in replica.stderr], daemon=True).start()
        if served is None:
            print("the replica did not start serving")
            return 1
        origin = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        copy = http.client.HTTPConnection("127.0.0.1", served, timeout=30)
        lags = []
        for n in range(writes):
            origin.request("POST", "/authors", body=json.dumps({"name": f"follow-{n}"}),
                           headers={"Content-Type": "application/json"})
            response = origin.getresponse()
            created = json.loads(response.read())["_id"]
            start = time.perf_counter()
            while True:
                copy.request("GET", f"/authors/{created}")
                answer = copy.getresponse()
                answer.read()
                if answer.status == 200:
                    break
                if time.perf_counter() - start > 30:
                    print(f"write {n} was not served by the replica within 30 s")
                    return 1
                time.sleep(0.001)
            lags.append(time.perf_counter() - start)
        lags.sort()
        print(f"| follow {writes} sequential writes | p50 {lags[len(lags) // 2] * 1000:.1f} ms "
              f"| p99 {lags[len(lags) * 99 // 100] * 1000:.1f} ms | max {lags[-1] * 1000:.1f} ms |")
        return 0
    finally:
        replica.terminate()
        replica.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=".build/release/strata")
    parser.add_argument("--changes", type=int, default=100000)
    parser.add_argument("--bulk", action="store_true")
    parser.add_argument("--follow", type=int, default=0, help="measure a running replica's lag over this many writes")
    arguments = parser.parse_args()
    binary = os.path.abspath(arguments.binary)
    folder = tempfile.mkdtemp(prefix="strata-sync-catchup-")
    port = free_port()
    log = open(os.path.join(folder, "server.log"), "ab")
    server = subprocess.Popen([binary, "serve", "--port", str(port), "--data-dir", os.path.join(folder, "origin"),
                               "--durability", "normal"], stdout=log, stderr=log)
    try:
        if not wait_ready(port):
            print("the server did not start")
            return 1
        if arguments.follow:
            return follow(binary, port, folder, arguments.follow)
        replica = [binary, "replicate", "--from", f"http://127.0.0.1:{port}", "--data-dir",
                   os.path.join(folder, "replica"), "--once"]
        subprocess.run(replica, check=True, capture_output=True)
        started = time.time()
        write(port, arguments.changes, arguments.bulk)
        written = time.time() - started
        started = time.time()
        result = subprocess.run(replica, check=True, capture_output=True, text=True)
        caught_up = time.time() - started
        kind = "bulk (1,000 per transaction)" if arguments.bulk else "single-object transactions"
        print(f"| {arguments.changes:,} changes, {kind} | written in {written:.1f} s | caught up in {caught_up:.1f} s |")
        print(result.stderr.strip())
    finally:
        server.terminate()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
