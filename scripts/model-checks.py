#!/usr/bin/env python3
"""Serves Core Data models as they are and checks each one over HTTP.

For every model (the fixtures under Tests/Fixtures/CoreData, and the real models of public apps
in the shared Core Data material: ../shared/coredata beside the repository root, or the folder
STRATA_COREDATA_MATERIAL names; under CI=true a missing material is a failure, elsewhere a skip
said loudly):

  1. `strata model --model M` exits 0 (or 1, with the reason, for the models expected to be
     refused: Xcode 3 `elements` files);
  2. `strata serve --model M` starts on a free loopback port and answers /ready;
  3. every concrete entity accepts a POST of an object built from its OpenAPI create schema
     (every member given a value the schema allows; relationships pointing at objects created
     before), and GET of its Location returns every member as sent; two entities that each need
     the other are created together by one `_batch` with a `{"$ref": 0}`;
  4. for the fixtures (and every model with --fuzz-all), schemathesis's not_a_server_error check
     over every operation finds no 5xx.

Prints one line per model and ends with "N passed, N failed"; exits 1 when any check fails.
Standard library only; schemathesis is .venv/bin/st (scripts/test installs it).
"""

import argparse
import base64
import datetime
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "Tests" / "Fixtures" / "CoreData"
MATERIAL = Path(os.environ.get("STRATA_COREDATA_MATERIAL") or ROOT.parent / "shared" / "coredata")
# Models Core Data would not load as they are either, with what the refusal must say.
REFUSED = {
    "Xcode3.xcdatamodel": "Xcode 3",
    "DataModel.xcdatamodel": "Xcode 3",
    "MyDocument.xcdatamodel": "Xcode 3",
    "Recipes.xcdatamodel": "Xcode 3",
    "model2.xml": "uniqueness constraint names 'iD'",
}
# Models Core Data loads that Strata refuses today: the issue that fixes each, and what the refusal
# says. Any other outcome fails, a load included (the mark then goes).
KNOWN = {}


def material_missing():
    """What is missing of the Core Data material and where it was looked for, or None."""
    if (MATERIAL / "models").is_dir() and (MATERIAL / "stores").is_dir():
        return None
    return (f"no Core Data material (models/ and stores/) at {MATERIAL}: provide the shared set at "
            "../shared/coredata beside the repository root, or name its folder in STRATA_COREDATA_MATERIAL")


def models():
    found = [(p, True) for p in sorted(FIXTURES.iterdir()) if p.suffix in (".xcdatamodel", ".xcdatamodeld")]
    if material_missing() is None:
        for path in sorted(MATERIAL.rglob("*")):
            # Inside a model bundle, or a mapping model's xcmapping.xml (not a data model).
            inside = any(part.endswith((".xcdatamodeld", ".xcdatamodel", ".xcmappingmodel"))
                         for part in path.relative_to(MATERIAL).parts[:-1])
            if not inside and (path.suffix in (".xcdatamodel", ".xcdatamodeld") or path.suffix == ".xml"):
                found.append((path, False))
    return found


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(base, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            text = response.read()
            return response.status, dict(response.headers), json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = text.decode(errors="replace")
        return error.code, dict(error.headers), parsed


class Maker:
    """Values a create schema allows, unique per call."""

    def __init__(self):
        self.counter = 0

    def value(self, schema):
        self.counter += 1
        n = self.counter
        if "anyOf" in schema or "oneOf" in schema:
            return self.value((schema.get("anyOf") or schema["oneOf"])[0])
        if "enum" in schema:
            return schema["enum"][n % len(schema["enum"])]
        kind, form = schema.get("type"), schema.get("format")
        if kind == "string":
            if form == "date-time":
                return (datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=n)).isoformat().replace("+00:00", "Z")
            if form == "uuid":
                return str(uuid.uuid4())
            if form == "uri":
                return f"https://example.org/{n}"
            if form == "byte":
                return base64.b64encode(bytes([n % 256, 1, 2])).decode()
            low, high = schema.get("minLength", 0), schema.get("maxLength", 64)
            text = (f"v{n}-" + "x" * 64)[: max(low, min(high, 8))]
            pattern = schema.get("pattern")
            if pattern:
                for candidate in (text, str(n), "a", "abc", "a@example.org", "https://example.org/", "0", "A", "a1"):
                    if re.search(pattern, candidate):
                        return candidate
                return None
            return text
        if kind == "integer":
            low, high = schema.get("minimum", -(2**31)), schema.get("maximum", 2**31 - 1)
            return min(max(n % 100 + 1, low), high)
        if kind == "number":
            low, high = schema.get("minimum", -1e9), schema.get("maximum", 1e9)
            return min(max(n % 100 + 0.5, low), high)
        if kind == "boolean":
            return n % 2 == 0
        if kind == "object" and "properties" in schema:
            # A composite: every element of its schema.
            return {name: self.value(member) for name, member in schema["properties"].items()}
        if kind == "object" or not kind:
            return {"n": n}
        return None


def same(sent, got, schema):
    if sent == got:
        return True
    form = schema.get("format")
    if form == "date-time" and isinstance(got, str):
        parse = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
        return parse(sent) == parse(got)
    if form == "uuid" and isinstance(got, str):
        return sent.lower() == got.lower()
    if isinstance(sent, str) and isinstance(got, str):
        try:
            return Decimal(sent) == Decimal(got)
        except ArithmeticError:
            return False
    if isinstance(sent, (int, float)) and isinstance(got, (int, float)):
        return float(sent) == float(got)
    if isinstance(sent, dict) and isinstance(got, dict) and "properties" in schema:
        members = schema["properties"]
        return all(same(value, got.get(name), members.get(name, {})) for name, value in sent.items()) and all(
            got[name] is None for name in got if name not in sent)
    if isinstance(sent, list) and isinstance(got, list):
        return sorted(sent) == sorted(got) if not schema.get("x-ordered") else sent == got
    return False


RELATED = re.compile(r"related (\w+)")


def crud(base, spec, index):
    """POSTs one object of every concrete entity and GETs it back; returns a list of failures."""
    schemas = spec["components"]["schemas"]
    entities = {e["name"]: e for e in index["entities"]}

    def create_schema(entity):
        """The schema the collection's POST takes (named after the entity, or moved off a name the
        server's own schemas hold: an entity "Status" gets "StatusEntityCreate")."""
        post = spec["paths"].get(entity["path"], {}).get("post", {})
        ref = post.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {}).get("$ref", "")
        return schemas.get(ref.rsplit("/", 1)[-1]) if ref else None

    def is_relation(prop):
        """Whether a create-schema property is a relationship: an id or a list of ids."""
        return prop.get("format") == "int64" or prop.get("type") == "array" and prop.get("items", {}).get("format") == "int64"

    def ancestors(name):
        parent = entities[name].get("parent")
        return [parent] + ancestors(parent) if parent else []
    created = {}
    failures = []
    maker = Maker()
    pending = [e for e in index["entities"] if not e["abstract"]]
    for _ in range(len(pending) + 1):
        progress = []
        for entity in pending:
            create = create_schema(entity)
            if create is None:
                failures.append(f"{entity['name']}: no create schema")
                progress.append(entity)
                continue
            body, ready, optional = {}, True, set()
            for name, prop in create.get("properties", {}).items():
                match = RELATED.search(prop.get("description", "")) if is_relation(prop) else None
                if match:
                    target = match.group(1)
                    required = name in create.get("required", []) or prop.get("minItems", 0) > 0
                    ids = created.get(target) or [i for n in entities if created.get(n) and target in ancestors(n) for i in created[n]]
                    if not ids:
                        if required:
                            ready = False
                        continue
                    if not required:
                        optional.add(name)
                    if prop.get("type") == "array":
                        count = max(prop.get("minItems", 1), 1)
                        if len(ids) < count:
                            if required:
                                ready = False
                            continue
                        body[name] = ids[:count]
                    else:
                        body[name] = ids[0]
                    continue
                value = maker.value(prop)
                if value is None:
                    if name in create.get("required", []):
                        failures.append(f"{entity['name']}.{name}: no value fits {prop}")
                        ready = False
                    continue
                body[name] = value
            if not ready:
                continue
            progress.append(entity)
            status, headers, answer = request(base, "POST", entity["path"], body)
            # A relationship given only to exercise it may break the other side's count rules
            # (a team that needs two members): the server answers 409 naming those stored objects
            # in `objects`. Without those relationships, the object must be accepted.
            fields = {e.get("field") for e in answer.get("errors", [])} if status == 422 and isinstance(answer, dict) else set()
            others = status == 409 and isinstance(answer, dict) and bool(answer.get("objects"))
            if fields and fields <= optional | {None} or (others and optional):
                for name in optional:
                    body.pop(name, None)
                status, headers, answer = request(base, "POST", entity["path"], body)
            if status != 201:
                failures.append(f"POST {entity['path']} {json.dumps(body)} -> {status} {answer}")
                continue
            location = headers.get("Location") or headers.get("location")
            status, _, stored = request(base, "GET", location)
            if status != 200:
                failures.append(f"GET {location} -> {status} {stored}")
                continue
            for name, value in body.items():
                if not same(value, stored.get(name), create["properties"][name]):
                    failures.append(f"{entity['name']}.{name}: sent {value!r}, got {stored.get(name)!r}")
            created.setdefault(entity["name"], []).append(stored["_id"])
        pending = [e for e in pending if e not in progress]
        if not pending or not progress:
            break
    # Two entities that each need the other (a required to-one both ways) are created together,
    # as a client would: one `_batch` whose second operation names the first with {"$ref": 0}.
    def plain_body(create):
        body = {}
        for name, prop in create.get("properties", {}).items():
            if is_relation(prop) and RELATED.search(prop.get("description", "")):
                continue
            value = maker.value(prop)
            if value is not None:
                body[name] = value
        return body

    for entity in list(pending):
        if entity not in pending:
            continue
        create = create_schema(entity) or {}
        for name in create.get("required", []):
            prop = create["properties"][name]
            match = RELATED.search(prop.get("description", "")) if prop.get("format") == "int64" else None
            partner = next((e for e in pending if match and e["name"] == match.group(1) and e is not entity), None)
            if partner is None:
                continue
            batch = {"operations": [
                {"method": "POST", "path": partner["path"], "body": plain_body(create_schema(partner) or {})},
                {"method": "POST", "path": entity["path"], "body": {**plain_body(create), name: {"$ref": 0}}},
            ]}
            status, _, answer = request(base, "POST", "/_batch", batch)
            results = answer.get("results", []) if isinstance(answer, dict) else []
            if status != 200 or [r.get("status") for r in results] != [201, 201]:
                failures.append(f"POST /_batch {json.dumps(batch)} -> {status} {answer}")
                break
            for made, result in zip([partner, entity], results):
                created.setdefault(made["name"], []).append(result["body"]["_id"])
            pending = [e for e in pending if e is not entity and e is not partner]
            break
    for entity in pending:
        failures.append(f"{entity['name']}: its required relationships need objects none of which could be made")
    return failures, sum(len(v) for v in created.values())


def check(path, fuzz, args):
    name = path.name
    result = subprocess.run([args.binary, "model", "--model", str(path)], capture_output=True, text=True)
    if name in KNOWN:
        issue, says = KNOWN[name]
        if result.returncode == 1 and says in result.stderr:
            return True, f"a known issue ({issue}): {result.stderr.strip()[:300]}"
        return False, f"the known issue ({issue}) no longer occurs as marked; exit {result.returncode}: {result.stderr.strip()}"
    if name in REFUSED:
        if result.returncode == 1 and REFUSED[name] in result.stderr:
            return True, "refused as expected"
        return False, f"expected a refusal naming {REFUSED[name]!r}; exit {result.returncode}: {result.stderr.strip()}"
    if result.returncode != 0:
        return False, f"strata model exit {result.returncode}: {result.stderr.strip()}"
    with tempfile.TemporaryDirectory() as data:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        log = open(Path(data) / "server.log", "w")
        server = subprocess.Popen(
            [args.binary, "serve", "--model", str(path), "--port", str(port), "--data-dir", data + "/stores", "--durability", "normal"],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 20
            while True:
                try:
                    if request(base, "GET", "/ready")[0] == 200:
                        break
                except OSError:
                    pass
                if server.poll() is not None or time.time() > deadline:
                    return False, "the server did not start: " + (Path(data) / "server.log").read_text()[-600:]
                time.sleep(0.1)
            _, _, spec = request(base, "GET", "/openapi.json")
            _, _, index = request(base, "GET", "/")
            failures, made = crud(base, spec, index)
            note = f"{made} objects over {sum(not e['abstract'] for e in index['entities'])} entities"
            if not failures and fuzz:
                run = subprocess.run(
                    # The shared settings: among them `wait=0` for /_changes, whose long poll would
                    # outlast the request timeout.
                    [args.st, "--config-file", str(ROOT / "scripts" / "schemathesis.toml"), "run", base + "/openapi.json",
                     "--checks", "not_a_server_error", "--max-examples", str(args.max_examples),
                     "--workers", "1", "--phases", "examples,coverage,fuzzing", "--seed", "1", "--no-color",
                     "--generation-database", "none", "--request-timeout", "10"],
                    capture_output=True, text=True, timeout=300, cwd=data)
                if run.returncode != 0:
                    failures.append("schemathesis found server errors:\n" + run.stdout[-3000:])
                else:
                    note += "; schemathesis: no server error"
            if server.poll() is not None:
                failures.append("the server exited")
            return not failures, note if not failures else "\n    ".join(failures[:20])
        finally:
            server.terminate()
            server.wait(timeout=10)
            log.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(ROOT / ".build" / "debug" / "strata"))
    parser.add_argument("--st", default=str(ROOT / ".venv" / "bin" / "st"))
    parser.add_argument("--max-examples", type=int, default=int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "10")))
    parser.add_argument("--fuzz-all", action="store_true", help="run schemathesis over the real models too")
    parser.add_argument("models", nargs="*", help="model paths (default: the fixtures and the material)")
    args = parser.parse_args()
    chosen = [(Path(m), True) for m in args.models] if args.models else models()
    passed = failed = 0
    missing = None if args.models else material_missing()
    if missing and os.environ.get("CI") == "true":
        print(f"FAILED: the real Core Data models: {missing}", flush=True)
        failed += 1
    elif missing:
        print(f"*** SKIPPED: the real Core Data models: {missing} (under CI=true this fails) ***", flush=True)
    for path, fixture in chosen:
        started = time.time()
        ok, note = check(path, fixture or args.fuzz_all, args)
        label = path.relative_to(MATERIAL) if MATERIAL in path.parents else path.relative_to(ROOT) if ROOT in path.parents else path
        print(f"{'ok' if ok else 'FAILED'}: {label} ({time.time() - started:.1f}s): {note}", flush=True)
        passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
