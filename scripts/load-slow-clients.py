#!/usr/bin/env python3
"""Slow and large clients against `fleetbot serve` (issue 22, item 6).

Starts the server (debug or release binary) with a throwaway key and store, then opens
IDLE idle connections and BODIES concurrent unsigned 25 MB POSTs, and reports how long
/healthz takes meanwhile and the server's resident memory. Usage:

    scripts/load-slow-clients.py [--binary target/release/fleetbot] [--idle 9000] [--bodies 40]

The machine's file-descriptor limit bounds --idle (each idle connection costs this process
and the server one descriptor each).
"""
import argparse, os, socket, subprocess, tempfile, threading, time

def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")

def health(port):
    t = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = s.recv(100)
    s.close()
    return (time.monotonic() - t) * 1000, answer.startswith(b"HTTP/1.1 200")

def unsigned_body(port, results):
    body = b"x" * (25 * 1024 * 1024)
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: push\r\n"
                  b"X-GitHub-Delivery: d\r\nContent-Length: %d\r\n\r\n" % len(body))
        answer = s.recv(100)
        results.append(answer[:12])
        try:
            s.sendall(body)
        except OSError:
            pass
        s.close()
    except OSError as e:
        results.append(str(e).encode())

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="target/debug/fleetbot")
    ap.add_argument("--idle", type=int, default=9000)
    ap.add_argument("--bodies", type=int, default=40)
    args = ap.parse_args()
    d = tempfile.mkdtemp()
    key = os.path.join(d, "key.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", key], check=True, stderr=subprocess.DEVNULL)
    env = dict(os.environ, FLEETBOT_LISTEN="127.0.0.1:0", FLEETBOT_WEBHOOK_SECRET="s",
               FLEETBOT_APP_ID="1", FLEETBOT_APP_PRIVATE_KEY_PATH=key,
               FLEETBOT_STORE=f"sqlite://{d}/s.sqlite", FLEETBOT_CLOUD="none",
               FLEETBOT_MAX_CONNECTIONS=str(max(args.idle // 4, 64)), RUST_LOG="warn")
    server = subprocess.Popen([args.binary, "serve"], env=env, stderr=subprocess.PIPE, text=True)
    port = None
    for line in server.stderr:
        if "listening on" in line:
            port = int(line.split("listening on ")[1].split()[0].rsplit(":", 1)[1])
            break
    threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
    time.sleep(0.5)
    print(f"idle server: {rss_mib(server.pid):.1f} MiB; /healthz {health(port)[0]:.1f} ms")
    idle = []
    for _ in range(args.idle):
        try:
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError as e:
            print(f"stopped opening idle connections at {len(idle)}: {e}")
            break
    worst = max(health(port)[0] for _ in range(20))
    print(f"{len(idle)} idle connections: {rss_mib(server.pid):.1f} MiB; worst /healthz of 20: {worst:.1f} ms")
    results = []
    threads = [threading.Thread(target=unsigned_body, args=(port, results)) for _ in range(args.bodies)]
    for t in threads:
        t.start()
    peak, worst = 0.0, 0.0
    while any(t.is_alive() for t in threads):
        peak = max(peak, rss_mib(server.pid))
        ms, ok = health(port)
        worst = max(worst, ms if ok else float("inf"))
        time.sleep(0.05)
    refused = sum(1 for r in results if r.startswith(b"HTTP/1.1 401"))
    print(f"{args.bodies} unsigned 25 MB bodies: {refused} refused with 401 before the body; "
          f"peak {peak:.1f} MiB; worst /healthz {worst:.1f} ms")
    time.sleep(2)
    print(f"after: {rss_mib(server.pid):.1f} MiB")
    server.terminate()
    server.wait(timeout=40)

if __name__ == "__main__":
    main()
