"""Schemathesis hooks for scripts/http-checks.sh and scripts/model-checks.py (loaded through
SCHEMATHESIS_HOOKS, which both set).

In the stateful phase, every valid Idempotency-Key the generator makes gets a suffix of its own, so
that no two of its requests share a key. The generator sends the same short keys ("0") again and again; with the same
request, the server then answers the first answer again, as the IETF draft says it must: a
created object's 201 even after a later DELETE removed the object, which the stateful phase then
reports as "created resource not found" (ST302) when it follows the replayed Location. Reused keys,
replays and the 422 for a key sent with another request are checked by IdempotencyTests (a real
server on a loopback port); keys that break the header's pattern, or are longer than 240
characters, are left as generated.
"""

import itertools
import re

import schemathesis

_VALID = re.compile(r"^[!-~]{1,240}$")
_NUMBERS = itertools.count()


def _stateful(case):
    meta = getattr(case, "_meta", None)
    phase = getattr(meta, "phase", None)
    return getattr(getattr(phase, "name", None), "value", None) == "stateful"


@schemathesis.hook
def before_call(context, case, **kwargs):
    # Only where links are followed: an edit here makes schemathesis revalidate the case, which in
    # the coverage phase let a "missing required header" case be sent with the CLI's header.
    if not _stateful(case):
        # The coverage phase does not pass its queries through map_query (below): bring an
        # aggregate query within the rules here, the query only.
        if isinstance(case.query, dict) and ("having" in case.query or "order" in case.query):
            map_query(context, case.query)
        return
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() == "idempotency-key" and isinstance(headers[name], str) and _VALID.match(headers[name]):
            headers[name] = f"{headers[name]}~{next(_NUMBERS)}"


# Lists with aggregates (`select=`): each parameter's pattern states what the server takes alone,
# but three rules tie parameters together, which no JSON Schema pattern can state: `having` and
# aggregate keys of `order` (`count().desc`) need `select`; with `select`, a plain `order` key must
# be one of its grouped columns; and two members of `select` cannot share a name (`avg` of two
# columns, or an alias given twice). AggregateRESTTests checks each of them is a 400 that says so.
# A generated query that breaks one is brought back within them, so the checks keep judging every
# other part of it.
def _member(item):
    name, _, expression = item.rpartition(":")
    if not name:
        name = expression
        if expression.endswith("()"):
            name = "count" if expression == "count()" else expression[:-2].rpartition(".")[2]
    return name, expression


@schemathesis.hook
def map_query(context, query):
    if not isinstance(query, dict):
        return query
    select = query.get("select")
    order = query.get("order")
    if not isinstance(select, str):
        query.pop("having", None)
        if isinstance(order, str):
            keys = [key for key in order.split(",") if "()" not in key]
            if keys:
                query["order"] = ",".join(keys)
            else:
                query.pop("order", None)
        return query
    names, items, grouped = set(), [], set()
    for item in select.split(","):
        name, expression = _member(item)
        if name in names:
            continue
        names.add(name)
        items.append(item)
        if not expression.endswith("()"):
            grouped.add(expression)
    if any(item.rpartition(":")[2].endswith("()") for item in items):
        query["select"] = ",".join(items)
    if isinstance(order, str):
        keys = [
            key for key in order.split(",") if "()" in key or key in grouped or key.rsplit(".", 1)[0] in grouped
        ]
        if keys:
            query["order"] = ",".join(keys)
        else:
            query.pop("order", None)
    return query
