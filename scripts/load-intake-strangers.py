#!/usr/bin/env python3
"""Strangers against `fleetbot serve`'s webhook intake (issue 32, item 2), side by side with a
run without them.

Starts the server (a fresh throwaway key and SQLite store per run, FLEETBOT_WORKERS=0 so only
intake is measured) and, in each run, sends GENUINE correctly signed pull_request deliveries
(~20 KB, a new connection each, open loop at --rate a second) while strangers attack:

  none         no strangers: the reference run.
  slow         --slow uploads with a well-formed but wrong X-Hub-Signature-256,
               Content-Length 1000000, then a byte a second; each one the server drops is
               reopened at once, so --slow are held open throughout. They come from
               --addresses loopback addresses (127.0.1.x), as a few machines would.
  slow-1addr   the same from one address.
  slow-proxy   the same from one address that the genuine deliveries come from too: a proxy
               that forwards no client address (issue 52).
  stalled-proxy  as slow-proxy, but each upload sends its first 8 KiB at once before it
               trickles, so it is given a slot (the server reads that much before it does).
  large        --bodies concurrent 25 MB fake-signed bodies sent at full speed from as many
               addresses, each reopened as soon as it is answered, throughout.

For each run it prints the genuine deliveries accepted (202 "accepted"), lost (anything
else, or no answer within 30 s), intake latency p50/p99/max (connect to answer), the
server's resident memory before and at its peak (VmHWM), and the strangers' answers by
status. Usage:

    scripts/load-intake-strangers.py [--binary target/release/fleetbot] [--runs none,slow,large]
        [--genuine 100] [--rate 20] [--slow 64] [--addresses 16] [--bodies 40]

Linux only (source addresses across 127/8, /proc). Every figure is a loopback figure, with the
script and the server sharing the machine's cores.
"""
import argparse, hashlib, hmac, json, os, select, socket, subprocess, sys, tempfile, threading, time

SECRET = b"load-intake-strangers"
FORGED = "sha256=" + "0" * 64


def status_of(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) / 1024
    return out


def start_server(binary, workdir):
    key = os.path.join(workdir, "key.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt",
                    "rsa_keygen_bits:2048", "-out", key], check=True, stderr=subprocess.DEVNULL)
    env = dict(os.environ, FLEETBOT_LISTEN="127.0.0.1:0",
               FLEETBOT_WEBHOOK_SECRET=SECRET.decode(), FLEETBOT_APP_ID="1",
               FLEETBOT_APP_PRIVATE_KEY_PATH=key, FLEETBOT_STORE=f"sqlite://{workdir}/s.sqlite",
               FLEETBOT_CLOUD="none", FLEETBOT_WORKERS="0",
               FLEETBOT_GITHUB_API_URL="http://127.0.0.1:9", RUST_LOG="warn")
    server = subprocess.Popen([binary, "serve"], env=env, stderr=subprocess.PIPE, text=True)
    port = None
    for line in server.stderr:
        if "listening on" in line:
            port = int(line.split("listening on ")[1].split()[0].rsplit(":", 1)[1])
            break
    if port is None:
        sys.exit("the server did not start")
    threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
    return server, port


def head(delivery, length, signature):
    return (f"POST /webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: pull_request\r\n"
            f"X-GitHub-Delivery: {delivery}\r\nX-Hub-Signature-256: {signature}\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


def payload(n):
    body = {"action": "opened", "number": n,
            "pull_request": {"number": n, "head": {"sha": f"{n:040x}", "ref": f"b{n}"}},
            "repository": {"full_name": "octo-org/fleet"}, "installation": {"id": 1},
            "padding": "x" * 20000}
    return json.dumps(body).encode()


def read_answer(s):
    """The whole answer (head and Content-Length body), or what came before the close."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            return data
        data += chunk
    top, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in top.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(rest) < length:
        chunk = s.recv(4096)
        if not chunk:
            break
        rest += chunk
    return top + b"\r\n\r\n" + rest


def status(data):
    line = data.split(b"\r\n", 1)[0].decode(errors="replace")
    return line.split(" ")[1] if line.startswith("HTTP/1.1 ") else "closed"


def genuine(port, n, results, source="127.0.0.1"):
    body = payload(n)
    sig = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    t = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=30,
                                     source_address=(source, 0))
        s.sendall(head(f"g-{n:08d}-{os.getpid()}", len(body), sig) + body)
        data = read_answer(s)
        s.close()
        ok = data.startswith(b"HTTP/1.1 202") and data.endswith(b"accepted\n")
        results.append((ok, (time.monotonic() - t) * 1000, status(data)))
    except OSError as e:
        results.append((False, (time.monotonic() - t) * 1000, type(e).__name__))


class Strangers:
    """Threads that each keep one fake-signed upload open, reopening it when answered."""

    def __init__(self, port, kind, count, addresses, first=0):
        self.port, self.kind, self.stop = port, kind, threading.Event()
        self.first = first
        self.answers, self.lock, self.opened = {}, threading.Lock(), 0
        self.body = b" " * (25 << 20) if kind == "large" else None
        self.threads = [threading.Thread(target=self.loop, args=(i, addresses[i % len(addresses)]),
                                         daemon=True) for i in range(count)]

    def start(self):
        for t in self.threads:
            t.start()

    def note(self, answer):
        with self.lock:
            self.answers[answer] = self.answers.get(answer, 0) + 1

    def loop(self, i, source):
        n = 0
        while not self.stop.is_set():
            n += 1
            try:
                s = socket.socket()
                s.bind((source, 0))
                s.settimeout(60)
                s.connect(("127.0.0.1", self.port))
                with self.lock:
                    self.opened += 1
                if self.kind == "large":
                    s.sendall(head(f"big-{i}-{n}", len(self.body), FORGED))
                    threading.Thread(target=self.blast, args=(s,), daemon=True).start()
                    answer = status(read_answer(s))
                else:
                    s.sendall(head(f"slow-{i}-{n}", 1_000_000, FORGED) + b" " * self.first)
                    answer = None
                    # A byte a second until the server answers (or the run ends).
                    while answer is None and not self.stop.is_set():
                        readable, _, _ = select.select([s], [], [], 1.0)
                        if readable:
                            answer = status(s.recv(4096))
                        else:
                            s.send(b" ")
                    if answer is None:
                        s.close()
                        return
                self.note(answer)
                s.close()
            except OSError as e:
                self.note(type(e).__name__)
                time.sleep(0.05)

    def blast(self, s):
        try:
            s.sendall(self.body)
        except OSError:
            pass

    def finish(self):
        self.stop.set()


def run(args, kind):
    workdir = tempfile.mkdtemp()
    server, port = start_server(args.binary, workdir)
    time.sleep(0.5)
    idle = status_of(server.pid)["VmRSS"]
    strangers = None
    if kind != "none":
        if kind in ("slow-1addr", "slow-proxy", "stalled-proxy"):
            addresses = ["127.0.1.1"]
        elif kind == "large":
            addresses = [f"127.0.2.{i + 1}" for i in range(args.bodies)]
        else:
            addresses = [f"127.0.1.{i + 1}" for i in range(args.addresses)]
        count = args.bodies if kind == "large" else args.slow
        strangers = Strangers(port, "large" if kind == "large" else "slow", count, addresses,
                              first=8192 if kind == "stalled-proxy" else 0)
        strangers.start()
        time.sleep(args.warmup)
    results, threads = [], []
    source = "127.0.1.1" if kind in ("slow-proxy", "stalled-proxy") else "127.0.0.1"
    start = time.monotonic()
    for n in range(args.genuine):
        due = start + n / args.rate
        time.sleep(max(0.0, due - time.monotonic()))
        t = threading.Thread(target=genuine, args=(port, n, results, source))
        t.start()
        threads.append(t)
    peak_sampled = 0.0
    while any(t.is_alive() for t in threads):
        peak_sampled = max(peak_sampled, status_of(server.pid)["VmRSS"])
        time.sleep(0.02)
    if strangers:
        strangers.finish()
    mem = status_of(server.pid)
    server.terminate()
    try:
        server.wait(timeout=40)
    except subprocess.TimeoutExpired:
        server.kill()
    lat = sorted(ms for ok, ms, _ in results if ok)
    lost = [r for r in results if not r[0]]
    pick = lambda q: lat[min(len(lat) - 1, max(0, int(round(q * len(lat))) - 1))] if lat else float("nan")
    desc = {"none": "no strangers",
            "slow": f"{args.slow} slow fake-signed uploads held open, {args.addresses} addresses",
            "slow-1addr": f"{args.slow} slow fake-signed uploads held open, 1 address",
            "slow-proxy": f"{args.slow} slow fake-signed uploads held open, 1 address shared with the genuine ones (a proxy, no forwarding header)",
            "stalled-proxy": f"{args.slow} fake-signed uploads that send 8 KiB at once, then a byte a second, held open, 1 address shared with the genuine ones",
            "large": f"{args.bodies} concurrent 25 MB fake-signed bodies, reopened throughout"}[kind]
    answers = ""
    if strangers:
        answers = f"{strangers.opened} opened; " + ", ".join(
            f"{k}: {v}" for k, v in sorted(strangers.answers.items()))
    lost_why = {}
    for _, _, why in lost:
        lost_why[why] = lost_why.get(why, 0) + 1
    return (f"| {desc} | {len(lat)}/{len(results)} | {len(lost)}"
            f"{' (' + ', '.join(f'{k}: {v}' for k, v in lost_why.items()) + ')' if lost else ''} | "
            f"{pick(0.5):.1f} ms | {pick(0.99):.1f} ms | {lat[-1] if lat else float('nan'):.1f} ms | "
            f"{idle:.0f} MiB | {max(mem['VmHWM'], peak_sampled):.0f} MiB | {answers} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default="target/release/fleetbot")
    ap.add_argument("--runs", default="none,slow,slow-1addr,slow-proxy,stalled-proxy,large")
    ap.add_argument("--genuine", type=int, default=100)
    ap.add_argument("--rate", type=float, default=20.0, help="genuine deliveries a second")
    ap.add_argument("--slow", type=int, default=64)
    ap.add_argument("--addresses", type=int, default=16)
    ap.add_argument("--bodies", type=int, default=40)
    ap.add_argument("--warmup", type=float, default=3.0,
                    help="seconds the strangers attack before the genuine deliveries start")
    args = ap.parse_args()
    print(f"binary {args.binary}; {args.genuine} genuine deliveries at {args.rate:g}/s\n")
    print("| run | accepted | lost | p50 | p99 | max | RSS idle | RSS peak | strangers' answers |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind in args.runs.split(","):
        print(run(args, kind.strip()), flush=True)


if __name__ == "__main__":
    main()
