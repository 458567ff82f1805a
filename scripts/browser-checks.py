#!/usr/bin/env python3
"""Opens the landing page, /docs and the model diagram in headless Chromium (Debian's chromium).

Run by scripts/test after `swift build`:

    python3 scripts/browser-checks.py [BINARY]

Starts `strata serve` as the README's set-up does (no option but a free loopback port and a fresh
data folder, from a working folder of its own, so /docs has only what the binary embeds),
creates a few objects, then for each page asks Chromium for the DOM after its scripts ran
(`--dump-dom`) and asserts on it: the landing page names every entity with its count, /docs
lists every operation of the OpenAPI document (Swagger UI's own DOM, so its JavaScript ran),
the diagram groups every entity in its configuration, the books table's search box and a facet
link lead to the objects they select. Chromium's network log must show no
request to any host but the server's. A screenshot of each page is kept in
.build/artifacts/screenshots. Prints one line per check and exits non-zero when one fails. Without
Chromium it fails under CI=true and is skipped (saying so) elsewhere.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/strata")
shots = os.path.join(".build", "artifacts", "screenshots")
failures = 0


def report(ok, name, detail=""):
    global failures
    print(("ok: " if ok else "FAILED: ") + name + (f" ({detail})" if detail else ""))
    if not ok:
        failures += 1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    # Under CI=true a missing browser fails the run; elsewhere the checks are skipped, loudly.
    if os.environ.get("CI") == "true":
        sys.exit("FAILED: the browser checks need chromium, and none is on PATH (apt-get install chromium)")
    print("*** SKIPPED: the browser checks: no chromium on PATH (apt-get install chromium); "
          "under CI=true this fails ***", flush=True)
    sys.exit(0)


def browse(url, work, extra):
    """The DOM after scripts ran, and every URL Chromium's network log shows the page asking for.

    Chromium's own traffic (its updater, clock and account checks) is no request of the page:
    those requests carry no initiator, while everything a page loads names the page's origin."""
    log = os.path.join(work, "net-%d.json" % time.monotonic_ns())
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-default-apps", "--disable-extensions", "--user-data-dir=" + os.path.join(work, "profile"),
               "--log-net-log=" + log, "--virtual-time-budget=10000"] + extra + [url]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    urls = set()
    if os.path.exists(log):
        text = open(log, encoding="utf-8", errors="replace").read().rstrip().rstrip(",")
        try:
            events = json.loads(text if text.endswith("}") else text + "]}").get("events", [])
        except json.JSONDecodeError:
            events = []
        origin = url.split("/", 3)[:3]
        for event in events:
            params = event.get("params") or {}
            initiator = params.get("initiator", "")
            if "url" in params and initiator.startswith("/".join(origin)):
                urls.add(params["url"])
        # The page itself, whatever its initiator.
        urls.add(url)
    return result.stdout, urls


def outside(urls, port):
    """Requests that left the machine: any http(s), ws or ftp URL not on the server's address."""
    return sorted(u for u in urls if re.match(r"^(https?|wss?|ftp)://", u)
                  and not u.startswith(f"http://127.0.0.1:{port}/"))


def request(base, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as response:
        return json.loads(response.read() or b"null")


def search_and_facets(base, work):
    """The table page's search box and a facet link, followed as a browser follows them: the form's
    fields as Chromium rendered them make the address a submission asks for (the box holding
    "wizard"), Chromium loads it (following the server's 303 to the list with its wfts filter), and
    a facet link read from the page it shows is loaded in turn."""
    import html
    dom, _ = browse(base + "/books", work, ["--dump-dom"])
    form = re.search(r'<form class="search" method="get" action="([^"]*)">(.*?)</form>', dom, re.S)
    fields = re.findall(r'<input type="(search|hidden)" name="([^"]*)"[^>]*?value="([^"]*)"', form.group(2)) if form else []
    report(form is not None and any(kind == "search" for kind, _, _ in fields), "the table page has a search box",
           "no form" if form is None else str(fields))
    if form is None:
        return
    query = "&".join(urllib.parse.quote(html.unescape(name)) + "=" +
                     urllib.parse.quote("wizard" if kind == "search" else html.unescape(value))
                     for kind, name, value in fields)
    dom, urls = browse(base + html.unescape(form.group(1)) + "?" + query, work, ["--dump-dom"])
    report("A Wizard of Earthsea" in dom and "The Dispossessed" not in dom and 'value="wizard"' in dom,
           "the search box lists what matches (through the wfts filter)",
           ", ".join(sorted(u for u in urls if "/books" in u)))
    dom, _ = browse(base + "/books", work, ["--dump-dom"])
    link = re.search(r'data-facet="year">.*?<a href="([^"]*year=eq\.1974[^"]*)">1974</a>', dom, re.S)
    report(link is not None, "the table page lists year facets as links", link.group(1) if link else "no link for 1974")
    if link is None:
        return
    dom, _ = browse(base + html.unescape(link.group(1)), work, ["--dump-dom"])
    report("The Dispossessed" in dom and "A Wizard of Earthsea" not in dom, "a facet link filters the table")


def main():
    chromium()  # before anything starts: without a browser there is nothing to check
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    work = tempfile.mkdtemp(prefix="strata-browser-")
    os.makedirs(shots, exist_ok=True)
    server = subprocess.Popen([binary, "serve", "--port", str(port), "--data-dir", os.path.join(work, "data")],
                              cwd=work, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "server.log"), "w"))
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/ready", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        author = request(base, "POST", "/authors", {"name": "Ursula K. Le Guin"})
        request(base, "POST", "/books/_bulk", [{"title": "A Wizard of Earthsea", "year": 1968, "author": author["_id"]},
                                               {"title": "The Dispossessed", "year": 1974, "author": author["_id"]}])
        request(base, "POST", "/tags", {"name": "fantasy"})
        index = request(base, "GET", "/")
        entities = [entity["name"] for entity in index["entities"]]
        document = request(base, "GET", "/openapi.json")

        dom, urls = browse(base + "/", work, ["--dump-dom"])
        missing = [e for e in entities if f'data-entity="{e}"' not in dom]
        counts = re.findall(r'data-entity="Book".*?<td class="count">(\d+)</td>', dom, re.S)
        report(not missing and counts[:1] == ["2"], "the landing page names every entity with its count",
               f"missing {missing}, Book count {counts[:1]}")
        report(not outside(urls, port), "the landing page loads nothing from elsewhere", ", ".join(outside(urls, port)))

        dom, urls = browse(base + "/docs", work, ["--dump-dom"])
        operations = [(op.get("tags") or ["default"])[0] + "-" + op["operationId"]
                      for item in document["paths"].values() for method, op in item.items()
                      if method in ("get", "post", "put", "patch", "delete")]
        absent = [o for o in operations if f'id="operations-{o}"' not in dom]
        report(not absent and len(operations) > 0, f"/docs (Swagger UI) lists all {len(operations)} operations",
               f"absent {absent[:5]}")
        loaded = {f"{base}/docs/swagger-ui-bundle.js", f"{base}/docs/swagger-ui.css"}
        report(loaded <= urls and 'class="swagger-ui' in dom, "/docs ran the Swagger UI embedded in the binary",
               f"loaded {sorted(u for u in urls if '/docs/' in u)}")
        report(not outside(urls, port), "/docs loads nothing from elsewhere", ", ".join(outside(urls, port)))

        dom, urls = browse(base + "/_model/diagram.svg", work, ["--dump-dom"])
        grouped = all(re.search(r'data-configuration="Catalog".*data-entity="%s"' % e, dom, re.S)
                      for e in ("Author", "Book", "Tag"))
        report(grouped and 'data-entity="SearchLog"' in dom, "the diagram draws every entity in its configuration")

        search_and_facets(base, work)

        for name, path in (("landing", "/"), ("docs", "/docs"), ("diagram", "/_model/diagram.svg"),
                           ("books", "/books")):
            target = os.path.abspath(os.path.join(shots, name + ".png"))
            browse(base + path, work, ["--screenshot=" + target, "--window-size=1400,1000", "--hide-scrollbars"])
            report(os.path.exists(target) and os.path.getsize(target) > 5000, f"screenshot of {path}", target)
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    print(f"browser checks: {failures} failed")
    sys.exit(1 if failures else 0)


main()
