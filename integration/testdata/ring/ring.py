#!/usr/bin/env python3
"""A torchrun-style ring without PyTorch (standard library only).

It reads what a torch worker reads (MASTER_ADDR, MASTER_PORT, RANK,
WORLD_SIZE) plus XRES_PORT, its own port. Rank 0 serves on MASTER_PORT as
the store: every other rank registers its port there and gets back the
whole table. Then the ranks sum their ranks around the ring over TCP
(0 -> 1 -> ... -> n-1 -> 0) and pass the total around once more, so that
every rank knows it. Each writes OUT/result.<CONTAINER_ID>:

    rank=R world=N sum=S pid=P

and waits for OUT/release (or for OUT to go).
"""
import json
import os
import socket
import sys
import time

out = sys.argv[1]
rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
master = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
port = int(os.environ["XRES_PORT"])


def log(msg):
    print("ring rank %d/%d: %s" % (rank, world, msg), file=sys.stderr, flush=True)


def connect(addr, deadline=60.0):
    end = time.time() + deadline
    while True:
        try:
            return socket.create_connection(addr, timeout=10)
        except OSError as e:
            if time.time() > end:
                raise SystemExit("ring rank %d: cannot reach %s:%d: %s" % (rank, addr[0], addr[1], e))
            time.sleep(0.2)


def readline(conn):
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            raise SystemExit("ring rank %d: connection closed early" % rank)
        buf += chunk
    return buf.decode().strip()


def send(addr, line):
    c = connect(addr)
    c.sendall((line + "\n").encode())
    c.close()


def receive(server):
    conn, _ = server.accept()
    line = readline(conn)
    conn.close()
    return line


server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("0.0.0.0", port))
server.listen(world + 4)
log("listening on %d, master %s:%d" % (port, master[0], master[1]))

# The store: rank 0 collects every rank's address and sends the table back.
table = {0: master}
if rank == 0:
    peers = []
    while len(peers) < world - 1:
        conn, (peer_host, _) = server.accept()
        msg = json.loads(readline(conn))
        table[msg["rank"]] = (peer_host, msg["port"])
        peers.append(conn)
    reply = (json.dumps({str(r): list(a) for r, a in table.items()}) + "\n").encode()
    for conn in peers:
        conn.sendall(reply)
        conn.close()
else:
    c = connect(master)
    c.sendall((json.dumps({"rank": rank, "port": port}) + "\n").encode())
    table = {int(r): (a[0], a[1]) for r, a in json.loads(readline(c)).items()}
    c.close()
log("table %s" % sorted(table.items()))

# The ring: the partial sum goes around once, the total once more.
nxt = table[(rank + 1) % world]
if world == 1:
    total = rank
elif rank == 0:
    send(nxt, "SUM %d" % rank)
    total = int(receive(server).split()[1])
    send(nxt, "TOTAL %d" % total)
else:
    s = int(receive(server).split()[1]) + rank
    send(nxt, "SUM %d" % s)
    total = int(receive(server).split()[1])
    if rank != world - 1:
        send(nxt, "TOTAL %d" % total)
log("sum %d" % total)

name = os.path.join(out, "result." + os.environ.get("CONTAINER_ID", "local"))
with open(name + ".tmp", "w") as f:
    f.write("rank=%d world=%d sum=%d pid=%d\n" % (rank, world, total, os.getpid()))
os.rename(name + ".tmp", name)
while os.path.isdir(out) and not os.path.exists(os.path.join(out, "release")):
    time.sleep(0.2)
