"""A dependent of the server group: connects to $XRES_SRV_ADDRESSES (its only rank), reads the
greeting and writes "<address> <greeting>" to <dir>/client.<container>. Usage: client.py <dir>."""
import os
import socket
import sys

out = sys.argv[1]
addr = os.environ["XRES_SRV_ADDRESSES"]
host, port = addr.rsplit(":", 1)
with socket.create_connection((host, int(port)), timeout=10) as c:
    line = c.makefile().readline().strip()
path = os.path.join(out, "client." + os.environ["CONTAINER_ID"])
with open(path + ".tmp", "w") as f:
    f.write("%s %s" % (addr, line))
os.rename(path + ".tmp", path)
