"""An HTTP(S) exchange bounded as a whole, not per socket read.

``urlopen(url, timeout=t)`` bounds each socket read by ``t``, so a server that drips its
status line and headers one byte per second holds the request for as long as it likes (87 s
against a 3 s budget in a probe). Here every connection the exchange opens (redirects open
more) gets a watchdog timer that shuts its socket down at the deadline: whatever read is
blocked then returns at once, and :attr:`Deadline.expired` tells the caller why.
"""
from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.request


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds
        self.expired = threading.Event()
        self._timers: list[threading.Timer] = []
        self._lock = threading.Lock()

    def passed(self) -> bool:
        return self.expired.is_set() or time.monotonic() > self.at

    def watch(self, sock) -> None:
        def fire() -> None:
            self.expired.set()
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed

        timer = threading.Timer(max(0.0, self.at - time.monotonic()), fire)
        timer.daemon = True
        with self._lock:
            self._timers.append(timer)
        timer.start()

    def cancel(self) -> None:
        with self._lock:
            for t in self._timers:
                t.cancel()
            self._timers.clear()

    def opener(self) -> urllib.request.OpenerDirector:
        """An opener whose HTTP and HTTPS connections are watched."""
        deadline = self

        def watched(base):
            class Watched(base):
                def connect(self):
                    super().connect()
                    deadline.watch(self.sock)

            return Watched

        class HTTP(urllib.request.HTTPHandler):
            def http_open(self, req):
                return self.do_open(watched(http.client.HTTPConnection), req)

        class HTTPS(urllib.request.HTTPSHandler):
            def https_open(self, req):
                return self.do_open(watched(http.client.HTTPSConnection), req, context=self._context)

        return urllib.request.build_opener(HTTP, HTTPS)
