"""A WebDAV server for the remote compile cache's test and benchmark: Debian's nginx (nginx-light
has the DAV module) on a free loopback port, serving a folder with PUT, configured from scratch in a
folder of its own (no system configuration, no root needed; as root its worker runs as root)."""

import glob
import os
import shutil
import signal
import socket
import subprocess
import time

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx serving `root` with WebDAV PUT on a free loopback port. With `token`, every request
    must carry "Authorization: <token>"."""

    def __init__(self, workdir, token=None):
        self.dir = workdir
        self.root = os.path.join(workdir, "root")
        os.makedirs(self.root, exist_ok=True)
        os.makedirs(os.path.join(workdir, "logs"), exist_ok=True)
        self.port = free_port()
        auth = 'if ($http_authorization != "%s") { return 401; }' % token if token else ""
        temp = "\n".join("  %s_temp_path %s/%s_temp;" % (k, workdir, k)
                         for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        conf = """
daemon off;
%(user)s
worker_processes 1;
pid %(dir)s/nginx.pid;
error_log %(dir)s/logs/error.log;
events { worker_connections 64; }
http {
  access_log %(dir)s/logs/access.log;
%(temp)s
  client_max_body_size 0;
  server {
    listen 127.0.0.1:%(port)d;
    root %(root)s;
    location / {
      %(auth)s
      dav_methods PUT;
      create_full_put_path on;
      dav_access user:rw;
    }
  }
}
""" % {"user": "user root;" if os.getuid() == 0 else "", "dir": workdir, "temp": temp, "port": self.port,
       "root": self.root, "auth": auth}
        self.conf = os.path.join(workdir, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(conf)
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([NGINX, "-p", self.dir, "-c", self.conf, "-e", os.path.join(self.dir, "logs", "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited: " + self.proc.stderr.read().decode())
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not start listening")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.proc.stderr.close()

    def url(self, prefix="/poprt"):
        return "http://127.0.0.1:%d%s" % (self.port, prefix)

    def files(self, kind):
        return sorted(glob.glob(os.path.join(self.root, "poprt", kind, "*")))
