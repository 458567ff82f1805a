#!/usr/bin/env bash
# Checks the HTTP surface against its OpenAPI document, with the PyPI tools in .venv (see
# scripts/test, which installs them): starts `.build/debug/strata serve` (built by `swift test`;
# nothing is built here) on a free port with a temporary data folder, waits for /ready, then
#   1. openapi-spec-validator accepts openapi.yaml;
#   2. the live server answers /openapi.yaml with exactly openapi.yaml;
#   3. openapi-python-client generates a client, which is installed into .venv and runs a round
#      trip (scripts/client_roundtrip.py: writes, then pages the history feed GET /_changes);
#   4. openapi-generator-cli generates the python and typescript-fetch clients without errors;
#      Debian's tsc compiles the TypeScript client with no error, together with
#      scripts/client_roundtrip.ts, which then runs a round trip (the feed paged too) under Node;
#   5. schemathesis runs every check (--checks all) over every operation (scripts/schemathesis.toml),
#      then again against a second server whose Catalog store is in PostgreSQL (a pg_virtualenv
#      cluster), against a server with bearer tokens and the document that declares them, and
#      against servers of two other models (the Zoo Core Data fixture and Tests/Fixtures/Models/Clinic.json);
#   6. scripts/model-checks.py serves every Core Data model fixture (and the real models, when
#      present) on servers of its own;
#   7. scripts/coredata-import-checks.py imports stores Core Data wrote, killed along the way;
# then stops the server. Prints one line per check and ends with "N passed, N failed"; exits
# non-zero when any check fails.
#
# Environment: SCHEMATHESIS_MAX_EXAMPLES (default 25) and SCHEMATHESIS_SEED (default: random).
set -uo pipefail
cd "$(dirname "$0")/.."
# Unique Idempotency-Keys in schemathesis runs (see the file).
export SCHEMATHESIS_HOOKS="$PWD/scripts/schemathesis_hooks.py"

venv=.venv
binary=.build/debug/strata
# Hypothesis (under schemathesis) keeps its Unicode tables here rather than in the work tree.
export HYPOTHESIS_STORAGE_DIRECTORY="$PWD/$venv/hypothesis"
passed=0
failed=0
work=$(mktemp -d "${TMPDIR:-/tmp}/strata-http-checks.XXXXXX")
server_pid=""

cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# check NAME COMMAND...: runs the command with its output in a log, and counts it.
check() {
    local name=$1 log started seconds
    shift
    log="$work/$(echo "$name" | tr -c 'A-Za-z0-9' '-').log"
    started=$(date +%s)
    if "$@" >"$log" 2>&1; then
        seconds=$(($(date +%s) - started))
        echo "ok: $name (${seconds}s)"
        grep -v '^[[:space:]]*$' "$log" | tail -n 1 | sed 's/^/    /'
        passed=$((passed + 1))
    else
        seconds=$(($(date +%s) - started))
        echo "FAILED: $name (${seconds}s); its last lines:"
        tail -n 40 "$log" | sed 's/^/    /'
        failed=$((failed + 1))
    fi
}

summary() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}

for tool in openapi-spec-validator openapi-python-client openapi-generator-cli st; do
    if [ ! -x "$venv/bin/$tool" ]; then
        echo "FAILED: $venv/bin/$tool is missing; scripts/test installs the tools"
        failed=$((failed + 1))
        summary
    fi
done
if [ ! -x "$binary" ]; then
    echo "FAILED: $binary is missing; run swift build (or swift test) first"
    failed=$((failed + 1))
    summary
fi

# A free loopback port: bind port 0, read the port, release it.
port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
base="http://127.0.0.1:$port"
"$binary" serve --port "$port" --data-dir "$work/data" --durability normal >"$work/server.log" 2>&1 &
server_pid=$!

wait_ready() {
    local attempt
    for attempt in $(seq 1 100); do
        if "$venv/bin/python" - "$base/ready" <<'PY' 2>/dev/null; then return 0; fi
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=2) as response:
    sys.exit(0 if response.status == 200 else 1)
PY
        kill -0 "$server_pid" 2>/dev/null || { echo "the server exited:"; cat "$work/server.log"; return 1; }
        sleep 0.1
    done
    echo "no 200 from $base/ready within 10 s"
    cat "$work/server.log"
    return 1
}
check "strata serve answers /ready on port $port" wait_ready
if [ "$failed" -ne 0 ]; then summary; fi

check "openapi-spec-validator accepts openapi.yaml" "$venv/bin/openapi-spec-validator" openapi.yaml

served_document_is_checked_in() {
    "$venv/bin/python" - "$base/openapi.yaml" openapi.yaml <<'PY'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=10) as response:
    served = response.read()
    kind = response.headers.get("Content-Type")
with open(sys.argv[2], "rb") as file:
    checked_in = file.read()
print(f"served {len(served)} bytes as {kind}; openapi.yaml has {len(checked_in)}")
sys.exit(0 if served == checked_in and kind == "application/yaml" else 1)
PY
}
check "the server answers /openapi.yaml with openapi.yaml" served_document_is_checked_in

python_client_round_trip() {
    local out="$work/python-client" root
    root=$(pwd)
    mkdir -p "$out"
    (cd "$out" && "$root/$venv/bin/openapi-python-client" generate --path "$root/openapi.yaml" --meta setup \
        --config "$root/scripts/openapi-python-client.yaml") || return 1
    local package
    package=$(find "$out" -mindepth 1 -maxdepth 1 -type d | head -n 1)
    # The client's dependencies (httpx, attrs, python-dateutil) come with openapi-python-client.
    "$venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation --force-reinstall "$package" || return 1
    "$venv/bin/python" scripts/client_roundtrip.py "$base"
}
check "openapi-python-client: generate, install, round trip" python_client_round_trip

generator() {
    local language=$1 log="$work/generator-$1.log"
    # The PyPI package ships the generator's jar inside its wheel; it never downloads one.
    if ! "$venv/bin/python" -c 'import importlib.resources as r, sys; sys.exit(0 if (r.files("openapi_generator_cli") / "openapi-generator.jar").is_file() else 1)'; then
        echo "openapi-generator-cli has no openapi-generator.jar in $venv: reinstall it (pip install --force-reinstall openapi-generator-cli==7.26.0)"
        return 1
    fi
    if ! command -v java >/dev/null 2>&1; then
        echo "openapi-generator-cli needs a Java 11+ runtime on PATH (apt-get install openjdk-17-jre-headless)"
        return 1
    fi
    "$venv/bin/openapi-generator-cli" generate -g "$language" -i openapi.yaml -o "$work/generated-$language" >"$log" 2>&1
    local status=$?
    grep -E "WARN|ERROR|Exception" "$log" | sort | uniq -c
    if [ $status -ne 0 ] || grep -qE "\bERROR\b|Exception" "$log"; then
        tail -n 30 "$log"
        return 1
    fi
    echo "generated $(find "$work/generated-$language" -type f | wc -l) files"
}
check "openapi-generator-cli generate -g python" generator python
check "openapi-generator-cli generate -g typescript-fetch" generator typescript-fetch

# The TypeScript client must compile, not only be generated: tsc 4.8 (Debian's node-typescript),
# strict mode off, with the round trip in the same program, then the round trip under Node.
typescript_client_round_trip() {
    local dir="$work/generated-typescript-fetch"
    command -v tsc >/dev/null || { echo "tsc is missing: apt-get install node-typescript"; return 1; }
    command -v node >/dev/null || { echo "node is missing: apt-get install nodejs"; return 1; }
    [ -f "$dir/index.ts" ] || { echo "no generated client in $dir"; return 1; }
    cp scripts/client_roundtrip.ts "$dir/"
    cat >"$dir/tsconfig.json" <<'JSON'
{"compilerOptions": {"target": "es2019", "module": "commonjs", "lib": ["es2019", "dom"], "strict": false,
 "outDir": "dist", "skipLibCheck": true, "types": []},
 "include": ["index.ts", "apis", "models", "runtime.ts", "client_roundtrip.ts"]}
JSON
    local output errors
    output=$(cd "$dir" && tsc -p . 2>&1)
    errors=$(printf '%s\n' "$output" | grep -c "error TS")
    if [ -n "$output" ]; then
        printf '%s\n' "$output" | head -20
        echo "tsc: $errors errors"
        return 1
    fi
    echo "tsc $(tsc --version | sed 's/Version //'): 0 errors in $(find "$dir" -name '*.ts' | wc -l) files"
    node "$dir/dist/client_roundtrip.js" "$base"
}
check "typescript-fetch client: tsc with no error, round trip under Node" typescript_client_round_trip

schemathesis() {
    local seed=()
    if [ -n "${SCHEMATHESIS_SEED:-}" ]; then seed=(--seed "$SCHEMATHESIS_SEED"); fi
    # `timeout` bounds the run; schemathesis' own --max-time would instead repeat until it is spent.
    timeout 300 "$venv/bin/st" --config-file scripts/schemathesis.toml run openapi.yaml --checks all --url "$base" \
        --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-25}" --request-timeout 10 --no-color \
        --generation-database none "${seed[@]}"
}
check "schemathesis: default checks over every operation" schemathesis

# The same run against a server with the Catalog in PostgreSQL, on a throwaway pg_virtualenv
# cluster (password authentication over TCP, as a real deployment would).
schemathesis_postgresql() {
    command -v pg_virtualenv >/dev/null || { echo "pg_virtualenv is missing: apt-get install postgresql"; return 1; }
    local pg_port
    pg_port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
    mkdir -p "$work/pg-data"
    chmod 777 "$work/pg-data"
    cat >"$work/pg-run.sh" <<SH
set -u
"$binary" serve --port $pg_port --data-dir "$work/pg-data" --durability normal \
    --store "Catalog=postgresql://\$PGUSER@\$PGHOST:\$PGPORT/\$PGDATABASE?schema=schemathesis" >"$work/pg-server.log" 2>&1 &
pid=\$!
for _ in \$(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$pg_port/ready" && break; sleep 0.1; done
curl -s "http://127.0.0.1:$pg_port/" | grep -q '"type":"postgresql"' || { echo "the Catalog store is not in PostgreSQL"; cat "$work/pg-server.log"; kill \$pid; exit 1; }
timeout 300 "$venv/bin/st" --config-file scripts/schemathesis.toml run openapi.yaml --checks all --url "http://127.0.0.1:$pg_port" \
    --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-25}" --request-timeout 10 --no-color --generation-database none \
    >"$work/pg-schemathesis.log" 2>&1
status=\$?
kill -TERM \$pid
wait \$pid
exit \$status
SH
    # pg_virtualenv prints the cluster's log when the command fails; schemathesis' own report
    # comes after it, so that the check's last lines are the report.
    local status=0
    pg_virtualenv bash "$work/pg-run.sh" || status=$?
    [ -f "$work/pg-schemathesis.log" ] && cat "$work/pg-schemathesis.log"
    [ "$status" -eq 0 ] && [ -f "$work/pg-schemathesis.log" ]
}
check "schemathesis: the same with the Catalog store in PostgreSQL" schemathesis_postgresql

# A server with bearer tokens: its document (strata openapi --bearer) declares the scheme and 401/403;
# schemathesis sends the token, and its ignored_auth check sends none and expects 401.
schemathesis_bearer() {
    local bearer_port secret pid status
    bearer_port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
    secret=$("$venv/bin/python" -c 'import secrets; print(secrets.token_hex(20))')
    "$binary" openapi --bearer >"$work/bearer.yaml" || return 1
    "$venv/bin/openapi-spec-validator" "$work/bearer.yaml" || return 1
    "$binary" serve --port "$bearer_port" --data-dir "$work/bearer-data" --durability normal \
        --token "schemathesis:read,write,admin:$secret" >"$work/bearer-server.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$bearer_port/ready" && break; sleep 0.1; done
    curl -s "http://127.0.0.1:$bearer_port/openapi.yaml" | cmp -s - "$work/bearer.yaml" \
        || { echo "the served document is not strata openapi --bearer"; kill $pid; return 1; }
    timeout 300 "$venv/bin/st" --config-file scripts/schemathesis.toml run "$work/bearer.yaml" --checks all \
        --url "http://127.0.0.1:$bearer_port" -H "Authorization: Bearer $secret" \
        --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-25}" --request-timeout 10 --no-color --generation-database none
    status=$?
    grep -q "$secret" "$work/bearer-server.log" && { echo "the server log shows the secret"; status=1; }
    kill -TERM $pid
    wait $pid
    return $status
}
check "schemathesis: a server with bearer tokens, its document declaring them" schemathesis_bearer
# The same run (every default check, every phase including the stateful one) against servers of
# two other models: the Zoo Core Data fixture (entity inheritance three deep, two configurations,
# ordered to-many, every attribute type Core Data has) and Clinic (an abstract parent with two
# subentities, three configurations, a fetched property across stores), each from its served
# document.
schemathesis_model() {
    local model=$1 model_port pid status
    model_port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
    "$binary" serve --model "$model" --port "$model_port" --data-dir "$work/model-$model_port" --durability normal \
        >"$work/model-$model_port.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$model_port/ready" && break; sleep 0.1; done
    timeout 300 "$venv/bin/st" --config-file scripts/schemathesis.toml run "http://127.0.0.1:$model_port/openapi.json" --checks all \
        --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-25}" --request-timeout 10 --no-color --generation-database none
    status=$?
    kill -TERM $pid
    wait $pid
    return $status
}
check "schemathesis: the Zoo Core Data model (inheritance)" schemathesis_model "Tests/Fixtures/CoreData/Zoo.xcdatamodeld"
check "schemathesis: the Clinic model (inheritance, three configurations)" schemathesis_model "Tests/Fixtures/Models/Clinic.json"
# Core Data models served as they are: the fixtures and, where present, the real models of public
# apps (each on a server of its own; see the script).
check "Core Data models: load, serve, create every entity, schemathesis on the fixtures" python3 scripts/model-checks.py
# Stores Core Data wrote (built in its format, and real ones when present): imported with kill -9
# along the way, served, and compared with the Core Data tables (see the script).
check "Core Data stores: import killed and resumed, served, compared with the tables" python3 scripts/coredata-import-checks.py

summary
