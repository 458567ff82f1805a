#!/usr/bin/env python3
"""Writes SQLite stores in Core Data's own format, for Strata's import tests.

Core Data cannot run on Linux, so these stores are built with Python's sqlite3 exactly as Core
Data lays out a store (see the README, "Bringing an existing Core Data store"): Z_PRIMARYKEY with
entities numbered depth-first in case-insensitive name order, Z_METADATA with a binary property
list whose NSStoreModelVersionHashes are computed here from the model's XML (Core Data's entity
version hash layout, implemented on its own in this file), one Z<ROOT> table per inheritance
hierarchy with Z_PK/Z_ENT/Z_OPT, suffixed columns where sibling entities declare the same name,
Z<n>_<NAME> entity columns of to-ones into hierarchies, Z_FOK_ ordering columns, Z_<n><REL> join
tables, dates as seconds since 2001 (REAL and INTEGER), UUIDs as 16-byte BLOBs, Transformable values
as NSKeyedArchiver archives, external binary data (a marker byte, then the bytes or a file name
under .<store>_SUPPORT/_EXTERNAL_DATA/), and a WAL-mode store whose data is still in its -wal.

Usage: coredata-fixtures.py OUTPUT_DIR
Writes, for the model Tests/Fixtures/CoreData/Zoo.xcdatamodeld:
  zoo-v1-wal.sqlite (+ -wal, -shm, .zoo-v1-wal_SUPPORT/)  written by version "Zoo", WAL mode
  zoo-v2.sqlite                                          written by version "Zoo 2" (current)
  expected.json  every object as the stores hold it (the values Strata must import)
"""

import datetime
import hashlib
import json
import os
import plistlib
import shutil
import sqlite3
import struct
import sys
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "Tests" / "Fixtures" / "CoreData" / "Zoo.xcdatamodeld"
TYPE_CODES = {
    "Integer 16": 100, "Integer 32": 200, "Integer 64": 300, "Decimal": 400, "Double": 500, "Float": 600,
    "String": 700, "Boolean": 800, "Date": 900, "Binary": 1000, "UUID": 1100, "URI": 1200, "Transformable": 1800,
}
SQL_TYPES = {
    "Integer 16": "INTEGER", "Integer 32": "INTEGER", "Integer 64": "INTEGER", "Boolean": "INTEGER",
    "Decimal": "DECIMAL", "Double": "FLOAT", "Float": "FLOAT", "Date": "TIMESTAMP", "String": "VARCHAR",
    "URI": "VARCHAR", "UUID": "BLOB", "Binary": "BLOB", "Transformable": "BLOB",
}


def load_model(path):
    root = ET.parse(path / "contents").getroot()
    entities = {}
    for node in root.findall("entity"):
        entity = {
            "name": node.get("name"), "parent": node.get("parentEntity"), "abstract": node.get("isAbstract") == "YES",
            "modifier": node.get("versionHashModifier"), "attributes": [], "relationships": [], "uniqueness": [],
        }
        for a in node.findall("attribute"):
            entity["attributes"].append({
                "name": a.get("name"), "type": a.get("attributeType"), "optional": a.get("optional") == "YES",
                "transient": a.get("transient") == "YES", "modifier": a.get("versionHashModifier"),
                "external": a.get("allowsExternalBinaryDataStorage") == "YES",
                "hasDefault": a.get("defaultValueString") is not None or a.get("defaultDateTimeInterval") is not None,
            })
        for r in node.findall("relationship"):
            entity["relationships"].append({
                "name": r.get("name"), "destination": r.get("destinationEntity"), "inverse": r.get("inverseName"),
                "toMany": r.get("toMany") == "YES", "ordered": r.get("ordered") == "YES",
                "optional": r.get("optional") == "YES", "transient": r.get("transient") == "YES",
                "minCount": int(r.get("minCount", "0")), "maxCount": int(r.get("maxCount", "0")),
                "modifier": r.get("versionHashModifier"),
            })
        entities[entity["name"]] = entity
    return {"version": root.get("userDefinedModelVersionIdentifier", ""), "entities": entities}


def lineage(model, name):
    chain = []
    while name:
        chain.insert(0, model["entities"][name])
        name = model["entities"][name]["parent"]
    return chain


def version_hashes(model):
    """Core Data's entity version hashes, per the documented byte layout."""
    hashes = {}

    def prop(p):
        flags = (1 if p["optional"] else 0) | (2 if p["transient"] else 0)
        return p["name"].encode() + struct.pack("<H", flags) + (p["modifier"] or "").encode()

    def entity_hash(name):
        if name in hashes:
            return hashes[name]
        e = model["entities"][name]
        data = name.encode() + bytes([1 if e["abstract"] else 0])
        if e["parent"]:
            data += entity_hash(e["parent"])
        props = []
        for owner in lineage(model, name):
            for a in owner["attributes"]:
                if not a["transient"]:
                    body = hashlib.sha256(prop(a)).digest() + struct.pack("<I", TYPE_CODES[a["type"]])
                    if a["external"]:
                        body += b"\x01"
                    props.append((a["name"], hashlib.sha256(body).digest()))
            for r in owner["relationships"]:
                if r["transient"]:
                    continue
                body = hashlib.sha256(prop(r)).digest() + r["destination"].encode()
                if r["inverse"] and r["inverse"] != r["name"]:
                    body += r["inverse"].encode()
                body += struct.pack("<I", r["maxCount"] if r["toMany"] else 1) + struct.pack("<I", r["minCount"])
                if r["ordered"]:
                    body += struct.pack("<H", 1)
                props.append((r["name"], hashlib.sha256(body).digest()))
        for _, digest in sorted(props, key=lambda item: item[0]):
            data += digest
        data += (e["modifier"] or "").encode()
        hashes[name] = hashlib.sha256(data).digest()
        return hashes[name]

    for name in model["entities"]:
        entity_hash(name)
    return hashes


def numbering(model):
    """Z_ENT numbers: case-insensitive name order, depth first, each root before its subentities."""
    numbers = {}
    def visit(name):
        numbers[name] = len(numbers) + 1
        children = [e for e in model["entities"].values() if e["parent"] == name]
        for child in sorted(children, key=lambda e: e["name"].lower()):
            visit(child["name"])
    roots = [e for e in model["entities"].values() if not e["parent"]]
    for root in sorted(roots, key=lambda e: e["name"].lower()):
        visit(root["name"])
    return numbers


def keyed_archive(value):
    """An NSKeyedArchiver archive of a value made of str, int, float, bool, list, dict, datetime,
    uuid.UUID, ("url", text) and ("object", classname)."""
    objects = ["$null"]
    classes = {}

    def class_uid(name, chain):
        if name not in classes:
            objects.append({"$classname": name, "$classes": chain})
            classes[name] = plistlib.UID(len(objects) - 1)
        return classes[name]

    def add(v):
        if isinstance(v, (str, int, float, bool)):
            objects.append(v)
            return plistlib.UID(len(objects) - 1)
        index = len(objects)
        objects.append(None)
        if isinstance(v, list):
            objects[index] = {"NS.objects": [add(x) for x in v], "$class": class_uid("NSArray", ["NSArray", "NSObject"])}
        elif isinstance(v, dict):
            keys = [add(k) for k in v]
            values = [add(x) for x in v.values()]
            objects[index] = {"NS.keys": keys, "NS.objects": values,
                              "$class": class_uid("NSDictionary", ["NSDictionary", "NSObject"])}
        elif isinstance(v, datetime.datetime):
            seconds = (v - datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)).total_seconds()
            objects[index] = {"NS.time": seconds, "$class": class_uid("NSDate", ["NSDate", "NSObject"])}
        elif isinstance(v, uuid.UUID):
            objects[index] = {"NS.uuidbytes": v.bytes, "$class": class_uid("NSUUID", ["NSUUID", "NSObject"])}
        elif isinstance(v, tuple) and v[0] == "url":
            objects[index] = {"NS.base": plistlib.UID(0), "NS.relative": add(v[1]),
                              "$class": class_uid("NSURL", ["NSURL", "NSObject"])}
        elif isinstance(v, tuple) and v[0] == "object":
            objects[index] = {"payload": add("opaque"), "$class": class_uid(v[1], [v[1], "NSObject"])}
        return plistlib.UID(index)

    root = add(value)
    archive = {"$version": 100000, "$archiver": "NSKeyedArchiver", "$top": {"root": root}, "$objects": objects}
    return plistlib.dumps(archive, fmt=plistlib.FMT_BINARY)


REFERENCE = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)


def iso(seconds):
    moment = REFERENCE + datetime.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".") + "Z"


def build(model, path, wal, support_name, version_name):
    """Writes one store of `model`; returns the expected objects."""
    numbers = numbering(model)
    names = {n: e for n, e in model["entities"].items()}
    def root(name):
        while names[name]["parent"]:
            name = names[name]["parent"]
        return name
    # Columns per root table, by Core Data's rules.
    tables = {}
    for name in sorted(numbers, key=numbers.get):
        table = tables.setdefault(root(name), {"columns": [], "uses": {}, "map": {}})
        e = names[name]
        for a in e["attributes"]:
            if a["transient"]:
                continue
            base = "Z" + a["name"].upper()
            use = table["uses"].get(base, 0)
            table["uses"][base] = use + 1
            column = base if use == 0 else base + str(use)
            table["columns"].append((column, SQL_TYPES[a["type"]]))
            table["map"][(name, a["name"])] = column
        for r in e["relationships"]:
            if r["toMany"] or r["transient"]:
                continue
            column = "Z" + r["name"].upper()
            table["columns"].append((column, "INTEGER"))
            table["map"][(name, r["name"])] = column
            destination = r["destination"]
            if any(x["parent"] == destination for x in names.values()):
                table["columns"].append(("Z%d_%s" % (numbers[destination], r["name"].upper()), "INTEGER"))
            inverse = next((x for x in names[destination]["relationships"] if x["name"] == r["inverse"]), None) if r["inverse"] else None
            if inverse and inverse["toMany"] and inverse["ordered"]:
                table["columns"].append(("Z_FOK_" + r["name"].upper(), "INTEGER"))

    for suffix in ["", "-wal", "-shm"]:
        if os.path.exists(str(path) + suffix):
            os.remove(str(path) + suffix)
    work = str(path) + ".building"
    for suffix in ["", "-wal", "-shm"]:
        if os.path.exists(work + suffix):
            os.remove(work + suffix)
    db = sqlite3.connect(work, isolation_level=None)
    if wal:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)")
    db.execute("CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)")
    db.execute("CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)")
    for rootname, table in sorted(tables.items()):
        columns = ", ".join("%s %s" % column for column in table["columns"])
        db.execute("CREATE TABLE Z%s (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER%s)" % (rootname.upper(), ", " + columns if columns else ""))
    db.execute("CREATE TABLE Z_1KEEPERS (Z_1ANIMALS INTEGER, Z_%dKEEPERS INTEGER, Z_FOK_1ANIMALS INTEGER, PRIMARY KEY (Z_1ANIMALS, Z_%dKEEPERS))" % (numbers["Keeper"], numbers["Keeper"]))
    db.execute("CREATE TABLE Z_1FRIENDS (Z_1FRIENDOF INTEGER, Z_1FRIENDS INTEGER, Z_FOK_1FRIENDOF INTEGER, Z_FOK_1FRIENDS INTEGER, PRIMARY KEY (Z_1FRIENDOF, Z_1FRIENDS))")
    db.execute("CREATE INDEX ZANIMAL_ZENCLOSURE_INDEX ON ZANIMAL (ZENCLOSURE)")
    db.execute("BEGIN")

    expected = {}
    support = path.parent / ("." + support_name + "_SUPPORT") / "_EXTERNAL_DATA"
    if support.parent.exists():
        shutil.rmtree(support.parent)
    support.mkdir(parents=True)

    def insert(table, values):
        keys = list(values)
        db.execute("INSERT INTO %s (%s) VALUES (%s)" % (table, ", ".join(keys), ", ".join("?" * len(keys))), [values[k] for k in keys])

    keeper_name = "name" if "name" in [a["name"] for a in names["Keeper"]["attributes"]] else "fullName"
    # Enclosures.
    for pk in range(1, 5):
        opened = 700000000 + pk * 86400
        insert("ZENCLOSURE", {"Z_PK": pk, "Z_ENT": numbers["Enclosure"], "Z_OPT": pk, "ZLABEL": "Enclosure %d" % pk,
                              "ZAREA": 10.25 * pk, "ZCAPACITY": 1000000000000 * pk, "ZOPENED": opened,
                              "ZSITE": "https://zoo.example/enclosures/%d" % pk})
        expected.setdefault("Enclosure", []).append({"_id": pk, "_version": pk, "label": "Enclosure %d" % pk,
            "area": repr(10.25 * pk), "capacity": 1000000000000 * pk, "opened": iso(opened),
            "site": "https://zoo.example/enclosures/%d" % pk})
    # Animals: cats, dogs, puppies.
    kinds = ["Cat", "Dog", "Puppy"]
    animals = []
    positions = {}
    archives = [
        (["shy", "fast"], ["shy", "fast"]),
        ({"meals": 3, "vet": "Dr. Rao"}, {"meals": 3, "vet": "Dr. Rao"}),
        (datetime.datetime(2020, 5, 17, 8, 30, tzinfo=datetime.timezone.utc), "2020-05-17T08:30:00Z"),
        (uuid.UUID("12345678-9abc-def0-1234-56789abcdef0"), "12345678-9ABC-DEF0-1234-56789ABCDEF0"),
        (("url", "https://zoo.example/a"), "https://zoo.example/a"),
        ([1, 2.5, True, {"deep": ["x"]}], [1, 2.5, True, {"deep": ["x"]}]),
        (("object", "ZooTrait"), None),
    ]
    for pk in range(1, 22):
        kind = kinds[pk % 3]
        enclosure = (pk % 4) + 1 if pk % 5 else None
        born = 600000000.5 + pk * 1000.25 if pk % 2 else 600000000 + pk * 1000
        tag = uuid.UUID(int=pk * 7919)
        row = {"Z_PK": pk, "Z_ENT": numbers[kind], "Z_OPT": 1 + pk % 3, "ZNAME": "%s %d" % (kind, pk), "ZBORN": born,
               "ZWEIGHT": 3.5 + pk, "ZTAG": tag.bytes, "ZENCLOSURE": enclosure}
        item = {"_id": pk, "_version": 1 + pk % 3, "name": "%s %d" % (kind, pk), "born": iso(born), "weight": 3.5 + pk,
                "tag": str(tag).upper(), "enclosure": enclosure}
        if enclosure:
            positions.setdefault(enclosure, []).append(pk)
            row["Z_FOK_ENCLOSURE"] = 1024 * (40 - pk)  # reversed: the residents' order is not pk order
        photo = None
        if pk % 4 == 1:
            row["ZPHOTO"] = b"\x01" + bytes([pk, 1, 2, 3])
            photo = bytes([pk, 1, 2, 3])
        elif pk % 4 == 2:
            name = "PHOTO-%d" % pk
            row["ZPHOTO"] = b"\x02" + name.encode() + b"\x00"
            if pk != 6:  # one external file is missing
                (support / name).write_bytes(bytes([pk]) * 64)
                photo = bytes([pk]) * 64
        item["photo"] = None if photo is None else __import__("base64").b64encode(photo).decode()
        archive, decoded = archives[pk % len(archives)]
        row["ZTRAITS"] = keyed_archive(archive)
        if decoded is None:
            item["traits"] = {"$binary": __import__("base64").b64encode(row["ZTRAITS"]).decode()}
        else:
            item["traits"] = decoded
        if kind == "Cat":
            row["ZINDOOR"] = pk % 2
            row["ZTOY"] = "mouse %d" % pk
            # Cat.ageWeeks (Integer 64) and Puppy.ageWeeks (Integer 32): Cat, numbered first, has
            # ZAGEWEEKS; Puppy's is ZAGEWEEKS1.
            row["ZAGEWEEKS"] = 5000000000 + pk
            item.update({"indoor": bool(pk % 2), "toy": "mouse %d" % pk, "ageWeeks": 5000000000 + pk})
        else:
            row["ZLIVES"] = pk % 3
            row["ZTOY1"] = "ball %d" % pk
            item.update({"lives": pk % 3, "toy": "ball %d" % pk})
            if kind == "Puppy":
                row["ZAGEWEEKS1"] = pk * 2
                item["ageWeeks"] = pk * 2
        insert("ZANIMAL", row)
        animals.append(pk)
        expected.setdefault(kind, []).append(item)
    for enclosure, members in positions.items():
        ordered = sorted(members, key=lambda pk: 40 - pk)
        for e in expected["Enclosure"]:
            if e["_id"] == enclosure:
                e["residents"] = ordered
    for e in expected["Enclosure"]:
        e.setdefault("residents", [])
    # Keepers: an ordered many-to-many (Keeper.animals) and a to-one without inverse into the hierarchy.
    keeper_animals = {1: [5, 3, 9], 2: [3], 3: [], 4: [21, 1, 2, 13]}
    for pk in range(1, 5):
        favourite = keeper_animals[pk][0] if keeper_animals[pk] else None
        row = {"Z_PK": pk, "Z_ENT": numbers["Keeper"], "Z_OPT": 1, "Z" + keeper_name.upper(): "Keeper %d" % pk,
               "ZSHIFTS": 1.5 * pk, "ZFAVOURITE": favourite}
        if favourite:
            row["Z%d_FAVOURITE" % numbers["Animal"]] = numbers[kinds[favourite % 3]]
        insert("ZKEEPER", row)
        for position, animal in enumerate(keeper_animals[pk]):
            db.execute("INSERT INTO Z_1KEEPERS VALUES (?, ?, ?)", (animal, pk, 2048 + 1024 * position))
        expected.setdefault("Keeper", []).append({"_id": pk, "_version": 1, keeper_name: "Keeper %d" % pk,
                                                  "shifts": 1.5 * pk, "favourite": favourite, "animals": keeper_animals[pk]})
    keepers_of = {}
    for keeper, members in keeper_animals.items():
        for animal in members:
            keepers_of.setdefault(animal, []).append(keeper)
    # Friends: a self-referential many-to-many ordered on both sides.
    friends = {1: [2, 3], 2: [1], 4: [1, 2, 3], 7: [4]}
    friend_of = {}
    for source, targets in friends.items():
        for target in targets:
            friend_of.setdefault(target, []).append(source)
    for target in friend_of:
        friend_of[target].sort(reverse=True)  # the friendOf order differs from pk order
    for source, targets in friends.items():
        for position, target in enumerate(targets):
            db.execute("INSERT INTO Z_1FRIENDS VALUES (?, ?, ?, ?)",
                       (source, target, 1024 * (friend_of[target].index(source) + 1), 1024 * (position + 1)))
    for kind in kinds:
        for item in expected[kind]:
            item["keepers"] = sorted(keepers_of.get(item["_id"], []))
            item["friends"] = friends.get(item["_id"], [])
            item["friendOf"] = friend_of.get(item["_id"], [])
    # Visits.
    for pk in range(1, 31):
        insert("ZVISIT", {"Z_PK": pk, "Z_ENT": numbers["Visit"], "Z_OPT": 1, "ZNOTE": "visit %d" % pk})
        expected.setdefault("Visit", []).append({"_id": pk, "_version": 1, "note": "visit %d" % pk})

    maxes = {"Animal": 21, "Enclosure": 4, "Keeper": 4, "Visit": 30}
    for name, number in sorted(numbers.items(), key=lambda item: item[1]):
        parent = names[name]["parent"]
        db.execute("INSERT INTO Z_PRIMARYKEY VALUES (?, ?, ?, ?)", (number, name, numbers[parent] if parent else 0, maxes.get(name, 0)))
    hashes = version_hashes(model)
    metadata = {
        "NSStoreModelVersionHashes": hashes, "NSStoreModelVersionIdentifiers": [model["version"]],
        "NSPersistenceFrameworkVersion": 1338, "NSStoreType": "SQLite", "NSStoreModelVersionHashesVersion": 3,
        "NSStoreModelVersionHashesDigest": __import__("base64").b64encode(hashlib.sha512(
            b"".join(n.encode() + hashes[n] for n in sorted(hashes))).digest()).decode(),
        "_NSAutoVacuumLevel": "2", "AppSyncToken": "not-for-printing",
    }
    store_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, "strata-fixture-" + path.name)).upper()
    db.execute("INSERT INTO Z_METADATA VALUES (1, ?, ?)", (store_uuid, plistlib.dumps(metadata, fmt=plistlib.FMT_BINARY)))
    db.execute("INSERT INTO Z_MODELCACHE VALUES (?)", (b"\x00",))
    db.execute("COMMIT")
    if wal:
        # Copy the three files while the data is still only in the log, as an app leaves them.
        for suffix in ["", "-wal", "-shm"]:
            shutil.copyfile(work + suffix, str(path) + suffix)
        db.close()
    else:
        db.close()
        shutil.copyfile(work, path)
    for suffix in ["", "-wal", "-shm"]:
        if os.path.exists(work + suffix):
            os.remove(work + suffix)
    return {"uuid": store_uuid, "version": version_name, "objects": expected,
            "hashes": {name: digest.hex() for name, digest in hashes.items()}}


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(64)
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    v1 = load_model(MODEL / "Zoo.xcdatamodel")
    v2 = load_model(MODEL / "Zoo 2.xcdatamodel")
    expected = {
        "zoo-v1-wal.sqlite": build(v1, out / "zoo-v1-wal.sqlite", True, "zoo-v1-wal", "Zoo"),
        "zoo-v2.sqlite": build(v2, out / "zoo-v2.sqlite", False, "zoo-v2", "Zoo 2"),
    }
    (out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True))
    print("wrote %s" % ", ".join(sorted(expected)))


if __name__ == "__main__":
    main()
