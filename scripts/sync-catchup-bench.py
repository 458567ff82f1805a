#!/usr/bin/env python3
"""Measures how long a replica that was offline takes to catch up with N changes on the server.

Starts `strata serve` on a temporary folder, seeds a replica (`strata replicate --once`), writes N
changes on the server while the replica is away (single-object POSTs, one transaction each, over
several keep-alive connections; or --bulk: `POST /authors/_bulk` of 1,000 objects per transaction),
then times `strata replicate --once` catching up, and prints one table row.

Usage: scripts/sync-catchup-bench.py [--binary .build/release/strata] [--changes 100000] [--bulk]
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=".build/release/strata")
    parser.add_argument("--changes", type=int, default=100000)
    parser.add_argument("--bulk", action="store_true")
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
