"""What scripts/lib/order-sesamed runs sesamed through to see which code a working daemon uses: a
subscriber, an account imported, its token, the account listed and read, and a logout (whose
revocation fails against the offline provider, as a provider that is down would). Usage:
order-workload.py SOCKET PID, the pid that of the sesamed listening there."""

import json
import os
import socket
import sys
import time


def connect(path, daemon):
    """Under callgrind sesamed takes seconds to listen, more on a busy machine: wait for as long
    as it runs."""
    while True:
        try:
            connection = socket.socket(socket.AF_UNIX)
            connection.connect(path)
            return connection
        except OSError:
            connection.close()
            try:
                os.kill(daemon, 0)
            except ProcessLookupError:
                sys.exit(f"order-workload: sesamed (pid {daemon}) stopped before it listened on {path}")
            time.sleep(0.1)


class Peer:
    def __init__(self, path, daemon):
        self.connection = connect(path, daemon)
        self.pending = b""

    def call(self, method, parameters, more=False):
        message = {"method": method, "parameters": parameters}
        if more:
            message["more"] = True
        self.connection.sendall(json.dumps(message).encode() + b"\0")
        return self.reply()

    def reply(self):
        while b"\0" not in self.pending:
            chunk = self.connection.recv(65536)
            if not chunk:
                sys.exit("order-workload: sesamed hung up")
            self.pending += chunk
        message, self.pending = self.pending.split(b"\0", 1)
        reply = json.loads(message)
        if "error" in reply:
            sys.exit(f"order-workload: {reply['error']}")
        return reply.get("parameters", {})


def main(path, daemon):
    subscriber = Peer(path, daemon)
    subscriber.call("io.sesame.Events.Subscribe", {}, more=True)
    caller = Peer(path, daemon)
    caller.call("org.varlink.service.GetInfo", {})
    tokens = {"accessToken": "t" * 1024, "refreshToken": "r" * 64, "expiresIn": 86400}
    imported = caller.call("io.sesame.Accounts.ImportTokens", {"provider": "google", "subject": "order", "tokens": tokens})
    account = imported["account"]["id"]
    subscriber.reply()
    for _ in range(3):
        caller.call("io.sesame.Accounts.GetToken", {"account": account})
        caller.call("io.sesame.Accounts.List", {})
        caller.call("io.sesame.Accounts.Get", {"account": account})
    caller.call("io.sesame.Accounts.Logout", {"account": account})
    subscriber.reply()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
