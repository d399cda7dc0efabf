"""A server that binds a port of its own choosing (port 0), as Flink's REST endpoint or a
framework's coordinator does, and tells xres where through $XRES_PORT_FILE; it greets every
client until the release file exists. Usage: server.py <dir>."""
import os
import socket
import sys
import time

out = sys.argv[1]
host = os.environ["NM_HOST"]
s = socket.socket()
s.bind((host, 0))
s.listen(16)
port = s.getsockname()[1]
# The dependents must wait for the port, not merely for this command to start.
time.sleep(2)
with open(os.environ["XRES_PORT_FILE"], "w") as f:
    f.write("%d\n" % port)
with open(os.path.join(out, "server.addr"), "w") as f:
    f.write("%s:%d" % (host, port))
s.settimeout(0.5)
while not os.path.exists(os.path.join(out, "release")):
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    try:
        c.sendall(b"hello from the server\n")
    except OSError:
        pass  # the launcher's probe connects and closes at once
    c.close()
