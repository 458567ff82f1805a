#!/usr/bin/env python3
"""Imports Core Data stores with `strata import`, killing it with SIGKILL along the way, and checks
the result from the outside.

For each store (the fixtures scripts/coredata-fixtures.py writes, and every store of the shared
Core Data material that Strata imports: ../shared/coredata beside the repository root, or the
folder STRATA_COREDATA_MATERIAL names; under CI=true a missing material is a failure, elsewhere a
skip said loudly; the stores whose import Core Data itself refuses are RealCoreDataStoreTests'):

  1. `strata inspect STORE --model M` names the version that wrote it;
  2. `strata import` is killed with SIGKILL at random moments and run again until it finishes,
     then once more ("already imported"); the stores it made are, table by table, what one
     uninterrupted import makes;
  3. `strata serve --no-migrate` over them answers every entity's list with the number of objects
     Core Data's tables hold (its Z_ENT rows and its subentities'), and every object's plain
     attributes (text, numbers, Booleans, dates) and to-one links equal the Core Data columns, read
     here with Python's sqlite3 from a copy;
  4. the source's files are byte for byte as they were.

Prints one line per store and ends with "N passed, N failed"; exits 1 when any check fails.
"""

import datetime
import hashlib
import importlib.util
import json
import os
import plistlib
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parent.parent
MATERIAL = Path(os.environ.get("STRATA_COREDATA_MATERIAL") or ROOT.parent / "shared" / "coredata") / "stores"
BINARY = str(ROOT / ".build" / "debug" / "strata")
spec = importlib.util.spec_from_file_location("fixtures", ROOT / "scripts" / "coredata-fixtures.py")
fixtures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fixtures)

# (store under the material, model, the version that wrote it)
BOOKMARKS = "ddg-bsk-bookmarks-KNOWN-A/BookmarksModel.xcdatamodeld"
REAL = [
    ("bnr-coredatastack-testmodel/TestModel.sqlite", "bnr-coredatastack-testmodel/Sample.xcdatamodeld", "TestModel"),
    ("cadets-ets/Sample.sqlite", "cadets-ets/Model.xcdatamodeld", "Model 20"),
    ("cadets-ets/Sample-prod.sqlite", "cadets-ets/Model.xcdatamodeld", "Model 20"),
    ("coredataplus-samplemodel/SampleModel_V1.sqlite", "coredataplus-samplemodel/SampleModel.xcdatamodeld", "SampleModel"),
    ("coredataplus-samplemodel/SampleModel_V2.sqlite",
     "coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel", "SampleModel2"),
    ("coredataplus-samplemodel-2018/SampleModelV2.sqlite",
     "coredataplus-samplemodel-2018/SampleModel.xcdatamodeld/SampleModel3.xcdatamodel", "SampleModel3"),
    ("coredataplus-samplemodel3/SampleModel3_V1.sqlite", "coredataplus-samplemodel3/SampleModel3.xcdatamodeld", "SampleModel3"),
    ("ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V1.sqlite", BOOKMARKS, "BookmarksModel"),
    ("ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V2.sqlite", BOOKMARKS, "BookmarksModel 2"),
    ("ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V3.sqlite", BOOKMARKS, "BookmarksModel 3"),
    ("ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V4.sqlite", BOOKMARKS, "BookmarksModel 4"),
    ("ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V5.sqlite", BOOKMARKS, "BookmarksModel 5"),
    ("ddg-bsk-syncmetadata-KNOWN-B/SyncMetadata_V3.sqlite", "ddg-bsk-syncmetadata-KNOWN-B/SyncMetadata.xcdatamodeld",
     "SyncMetadata 3"),
    ("hap-ios/HAP.sqlite", "hap-ios/HAP.xcdatamodeld", "HAP"),
    ("mwkcoredata/MWKCoreDataTests.sqlite", "mwkcoredata/MWKCoreDataTests.xcdatamodeld", "MWKCoreDataTests"),
    ("xcservercoredata/head/XCServerCoreData_2.0.1.sqlite", "xcservercoredata/XCServerCoreData.xcdatamodeld", "XCServerCoreData2.0.1"),
]
# Stores Core Data migrates and Strata refuses today: the issue that fixes each, and what the
# refusal says. Any other outcome fails, an import included (the mark then goes).
KNOWN = {}


def digest(path):
    return {s: hashlib.sha256(open(str(path) + s, "rb").read()).hexdigest()
            for s in ["", "-wal", "-shm"] if os.path.exists(str(path) + s)}


def current_version(path):
    """The `.xcdatamodel` of a model: itself, or a bundle's current version."""
    path = Path(path)
    if path.suffix == ".xcdatamodeld":
        marker = path / ".xccurrentversion"
        name = plistlib.loads(marker.read_bytes()).get("_XCCurrentVersionName") if marker.exists() else None
        versions = sorted(path.glob("*.xcdatamodel"))
        path = path / name if name else versions[-1]
    return path


def current_model(path):
    return fixtures.load_model(current_version(path))


def renamed(path):
    """The entities of a model's current version that name a renaming identifier (`elementID`):
    the name each had before, which a store written then keeps in Z_PRIMARYKEY."""
    contents = current_version(path) / "contents"
    if not contents.exists():
        return {}
    return {e.get("name"): e.get("elementID") for e in ElementTree.parse(contents).getroot().iter("entity")
            if e.get("elementID")}


def import_command(store, model, data, chunk, progress="none"):
    return [BINARY, "import", "--model", str(model), "--from", str(store), "--data-dir", str(data),
            "--chunk-size", str(chunk), "--progress", progress]


def killed_import(store, model, data, chunk, rng):
    """Runs the import, killed with SIGKILL after a random number of its progress lines (each a
    committed chunk or a phase), up to five times, then to the end; returns the kills."""
    kills = 0
    for _ in range(5):
        process = subprocess.Popen(import_command(store, model, data, chunk, "lines"), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)
        point = rng.randint(1, 40)
        seen = 0
        for _line in process.stderr:
            seen += 1
            if seen >= point:
                process.send_signal(signal.SIGKILL)
                kills += 1
                break
        process.wait()
        if process.returncode == 0:
            break
    finish = subprocess.run(import_command(store, model, data, chunk), capture_output=True, text=True)
    if finish.returncode != 0:
        raise AssertionError("import failed after %d kills: %s" % (kills, finish.stderr[-800:]))
    return kills


def dump(folder):
    """Every row of every table of the Strata stores in `folder`, but the store's own metadata."""
    rows = {}
    for path in sorted(Path(folder).glob("*.sqlite")):
        db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            if table.startswith("_strata"):
                continue
            rows[path.name + ":" + table] = sorted(repr(r) for r in db.execute('SELECT * FROM "%s"' % table))
        db.close()
    return rows


def get(base, path):
    with urllib.request.urlopen(base + path, timeout=30) as response:
        return json.loads(response.read())


def seconds_since_2001(text):
    """An RFC 3339 UTC time as seconds since 2001-01-01, proleptic Gregorian, any year from 0000
    (Core Data's distantPast is 0000-12-30)."""
    match = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?Z", text)
    if not match:
        raise ValueError("not an RFC 3339 UTC time: %r" % text)
    y, m, d, hh, mm, ss = (int(match.group(i)) for i in range(1, 7))
    y -= m <= 2  # days from civil (H. Hinnant)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468 - 11323
    return days * 86400 + hh * 3600 + mm * 60 + ss + float(match.group(7) or 0)


def compare_over_rest(store, model_path, data):
    """The served objects against the Core Data tables; returns (objects compared, failures)."""
    copy = tempfile.mkdtemp()
    for s in ["", "-wal", "-shm"]:
        if os.path.exists(str(store) + s):
            shutil.copyfile(str(store) + s, copy + "/store.sqlite" + s)
    cd = sqlite3.connect(copy + "/store.sqlite")
    numbers = {name: (number, parent) for number, name, parent in cd.execute("SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY")}
    for name, before in renamed(model_path).items():
        if name not in numbers and before in numbers:
            numbers[name] = numbers[before]
    model = current_model(model_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([BINARY, "serve", "--model", str(model_path), "--data-dir", str(data), "--no-migrate",
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = "http://127.0.0.1:%d" % port
    failures = []
    compared = 0
    try:
        for _ in range(100):
            try:
                if get(base, "/ready"):
                    break
            except OSError:
                time.sleep(0.1)
        index = {e["name"]: e for e in get(base, "/")["entities"]}
        for name, entity in model["entities"].items():
            if name not in numbers or entity["abstract"]:
                continue
            root = name
            while model["entities"][root]["parent"]:
                root = model["entities"][root]["parent"]
            table = "Z" + root.upper()
            columns = [r[1] for r in cd.execute('PRAGMA table_info("%s")' % table)]
            family = [name] + [n for n in model["entities"] if n != name and name in [e["name"] for e in fixtures.lineage(model, n)]]
            ents = [numbers[n][0] for n in family if n in numbers]
            expected = cd.execute("SELECT count(*) FROM %s WHERE Z_ENT IN (%s)" % (table, ",".join(map(str, ents)))).fetchone()[0]
            total = get(base, index[name]["path"] + "?limit=1&count=exact")["total"]
            if total != expected:
                failures.append("%s: Core Data holds %d objects, the server %d" % (name, expected, total))
            # Plain attributes and to-one links whose column is unambiguous.
            checks = []
            for owner in fixtures.lineage(model, name):
                for a in owner["attributes"]:
                    column = "Z" + a["name"].upper()
                    if not a["transient"] and column in columns and column + "1" not in columns:
                        checks.append((a["name"], column, a["type"], a["hasDefault"]))
                for r in owner["relationships"]:
                    column = "Z" + r["name"].upper()
                    if not r["toMany"] and not r["transient"] and column in columns and column + "1" not in columns:
                        checks.append((r["name"], column, "to-one", False))
            rows = {row[0]: row[1:] for row in cd.execute(
                "SELECT Z_PK, %s FROM %s WHERE Z_ENT = %d" % (", ".join(["Z_OPT"] + [c[1] for c in checks]), table, numbers[name][0]))}
            after = None
            while True:
                page = get(base, index[name]["path"] + "?limit=500" + ("&after=" + after if after else ""))
                for item in page["items"]:
                    if item["_id"] not in rows:
                        continue  # a subentity's object
                    row = rows[item["_id"]]
                    compared += 1
                    for (key, _, kind, has_default), value in zip(checks, row[1:]):
                        got = item.get(key)
                        if value is None:
                            # A migration to a version that makes it required fills in its default.
                            ok = got is None or has_default
                        elif kind in ("String", "URI"):
                            ok = got == value
                        elif kind.startswith("Integer") or kind == "to-one":
                            ok = got == value
                        elif kind == "Boolean":
                            ok = got == bool(value)
                        elif kind in ("Double", "Float"):
                            ok = got is not None and abs(got - value) <= 1e-6 * max(1.0, abs(value))
                        elif kind == "Date":
                            ok = got is not None and abs(seconds_since_2001(got) - value) <= 1e-6
                        else:
                            ok = True
                        if not ok:
                            failures.append("%s %d.%s: Core Data %r, the server %r" % (name, item["_id"], key, value, got))
                if not page.get("next"):
                    break
                after = page["next"].split("after=")[1].split("&")[0]
    finally:
        server.terminate()
        server.wait(timeout=10)
        cd.close()
        shutil.rmtree(copy)
    return compared, failures


def check(store, model, version, rng):
    before = digest(store)
    out = subprocess.run([BINARY, "inspect", str(store), "--model", str(model)], capture_output=True, text=True)
    if ("written by model version %s:" % version) not in out.stdout and ("written by model version %s (" % version) not in out.stdout:
        return False, "strata inspect does not name %s: %s" % (version, out.stdout.strip().splitlines()[-1:] or out.stderr)
    work = Path(tempfile.mkdtemp())
    try:
        rows = sum(int(line.split()[2]) for line in out.stdout.splitlines() if line.strip().endswith("objects") and len(line.split()) >= 4)
        chunk = max(2, rows // 25)
        clean = subprocess.run(import_command(store, model, work / "clean", chunk), capture_output=True, text=True)
        if clean.returncode != 0:
            return False, "import failed: " + clean.stderr.strip()
        kills = killed_import(store, model, work / "killed", chunk, rng)
        again = subprocess.run(import_command(store, model, work / "killed", chunk), capture_output=True, text=True)
        if "already imported" not in again.stdout:
            return False, "a rerun after the import did not say so: " + again.stdout + again.stderr
        stores = lambda folder: sorted(p.name for p in (work / folder).glob("*.sqlite"))
        if stores("killed") != stores("clean"):
            return False, "stores differ: %s vs %s" % (stores("killed"), stores("clean"))
        if dump(work / "killed") != dump(work / "clean"):
            return False, "the import killed %d times differs from an uninterrupted one" % kills
        compared, failures = compare_over_rest(store, model, work / "killed")
        if failures:
            return False, "; ".join(failures[:10])
        if digest(store) != before:
            return False, "the source's files changed"
        return True, "version %s, killed %d times (chunks of %d) and resumed to the same stores, %d objects compared over REST" % (version, kills, chunk, compared)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    rng = random.Random(int(os.environ.get("STRATA_SEED", "1")))
    cases = []
    fixture_dir = Path(tempfile.mkdtemp())
    subprocess.run([sys.executable, str(ROOT / "scripts" / "coredata-fixtures.py"), str(fixture_dir)], check=True,
                   stdout=subprocess.DEVNULL)
    zoo = ROOT / "Tests" / "Fixtures" / "CoreData" / "Zoo.xcdatamodeld"
    cases.append((fixture_dir / "zoo-v1-wal.sqlite", zoo, "Zoo"))
    cases.append((fixture_dir / "zoo-v2.sqlite", zoo, "Zoo 2"))
    passed = failed = 0
    if MATERIAL.is_dir() and (MATERIAL.parent / "models").is_dir():
        cases += [(MATERIAL / s, MATERIAL / m, v) for s, m, v in REAL]
    else:
        missing = (f"no Core Data material (models/ and stores/) at {MATERIAL.parent}: provide the shared set at "
                   "../shared/coredata beside the repository root, or name its folder in STRATA_COREDATA_MATERIAL")
        if os.environ.get("CI") == "true":
            print(f"FAILED: the real Core Data stores: {missing}", flush=True)
            failed += 1
        else:
            print(f"*** SKIPPED: the real Core Data stores: {missing} (under CI=true this fails) ***", flush=True)
    for store, model, version in cases:
        started = time.time()
        try:
            ok, note = check(store, model, version, rng)
        except AssertionError as error:
            ok, note = False, str(error)
        name = store.relative_to(MATERIAL) if MATERIAL in store.parents else store.name
        if str(name) in KNOWN:
            issue, says = KNOWN[str(name)]
            ok, note = (True, f"a known issue ({issue}): {note[:300]}") if not ok and says in note else (
                False, f"the known issue ({issue}) no longer occurs as marked: {note}")
        print("%s: %s (%.1fs): %s" % ("ok" if ok else "FAILED", name, time.time() - started, note), flush=True)
        passed, failed = passed + ok, failed + (not ok)
    shutil.rmtree(fixture_dir, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
