# Sourced by scripts that need a live `idempay serve --demo` on a throwaway SQLite file.
# `start_demo_server` starts target/debug/idempay on a free port and sets `base` to its
# URL; the server and its files go when the script exits. Build the binary first.
demo_work=$(mktemp -d)
demo_pid=""
stop_demo_server() { [ -n "$demo_pid" ] && kill "$demo_pid" 2>/dev/null || true; rm -rf "$demo_work"; }
trap stop_demo_server EXIT

start_demo_server() {
    target/debug/idempay serve --demo --bind 127.0.0.1:0 \
        --database-url "sqlite://$demo_work/demo.db" >"$demo_work/out" 2>"$demo_work/err" &
    demo_pid=$!
    for _ in $(seq 1 100); do grep -q '^idempay listening on ' "$demo_work/out" && break; sleep 0.1; done
    base=$(sed -n 's/^idempay listening on //p' "$demo_work/out" | head -n1)
    [ -n "$base" ] || { cat "$demo_work/err"; echo "server did not start" >&2; exit 1; }
}
